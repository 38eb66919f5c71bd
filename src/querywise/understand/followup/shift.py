"""The topic-shift check: does a message the gate flagged open a new subject instead?

A person changing subject mid-conversation writes a complete question ("can you give me details
of drivers from other states?") that the gate may still flag: "other" presupposes a set, a
definite ("the auto repair shop") wants an anchor, topic continuity fires on anything that names
nothing. Searching such a message with the previous subject carried in costs recall. A logistic
model over what the gate saw (which kind of cue, which cue families), how similar the message is
to the last turns, whether it names a subject of its own and how long it is, gives the chance
the message opens a new subject; at or over the model's threshold it is searched as typed.

What the message is compared with (`compared_texts`): the last `window` turns whole, and beside
them the last answer sentence by sentence. A passage of 100-250 words embeds as the average of all
it says, so a question about one of its sentences scored ~0.1 against it and read as a new subject
(#34). Chosen on the passage conversations of bench/understanding (dialogues_passages.jsonl) among
the last turn alone, with the latest user turn, with the first or the last three user turns, and
with the answer's sentences: added terms on its passage rows 0.445 / 0.616 (last turn alone, the
gate's uptake cue on) -> 0.474 / 0.631 with the sentences, the same with the latest user turn too;
that one was left out because on doc2dial it costs the changes of subject after an answer 0.009
recall@5 (a same-domain opener resembles the next one). The model's weights were fitted on the last
turn alone and are not refitted.

Under the threshold the chance still hedges: a threshold alone is a cliff, and the turns just
under it are where new subjects hide. A form searched beside the message loses weight linearly
over the last `ramp` of chance below the threshold; a pointer's form replaces the message only
under `replace_below`, and over it is searched with the message as typed beside it (the form
`hedge_weight` times the message's weight, ramped alike).

The weights are learnt, not written: `bench/training/topic_shift.py` trains them on doc2dial's train
documents and TREC CAsT 2019's train topics (real follow-ups against first turns placed after
another conversation), chooses the threshold and the hedge on the train and val splits, and writes
`topic_shift.json` with its provenance. Test documents and topics never reach the fit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from querywise.conversation import Turn
from querywise.text import SENTENCE_SPAN, analyze
from querywise.understand.followup.tracker import ANSWER_CHARS

__all__ = ["CUE_FAMILIES", "MIN_FORM_WEIGHT", "Searched", "ShiftModel", "compared_texts", "shift_features", "shift_model"]

#: A form weighing less than this beside the message can reorder only near-ties: not worth a search.
MIN_FORM_WEIGHT = 0.05

#: The gate's cue families the model reads (the prefix of a cue, before ":").
CUE_FAMILIES = (
    "continuity", "set", "definite", "pronoun", "short", "opener", "demonstrative", "particle",
    "classifier", "existential", "pro-form", "relation",
)


def compared_texts(history: Sequence[Turn], window: int) -> list[str]:
    """What a flagged message is compared with: the last `window` turns (their first
    `ANSWER_CHARS`), and each sentence of three words or more of the last turn when it is an
    answer (the sentence the message takes up, not the passage's average).

    >>> compared_texts([Turn(text="Do SSDs wear out?"), Turn(role="assistant", text="Yes. Flash cells wear with each write.")], 1)
    ['Yes. Flash cells wear with each write.', 'Flash cells wear with each write.']
    """
    out = [t.text[:ANSWER_CHARS] for t in history[-window:] if t.text.strip()]
    if history and history[-1].role == "assistant":
        out += [s.strip() for s in SENTENCE_SPAN.findall(history[-1].text[:ANSWER_CHARS]) if len(s.split()) >= 3]
    return list(dict.fromkeys(out))


def shift_features(kind: str, cues: Sequence[str], *, similarity: float, names_own: bool, message: str) -> dict[str, float]:
    """What the model reads about one flagged message. `kind`: "pointer", "described" or
    "continuity" (how the gate flagged it); `similarity`: the message's greatest cosine to the
    last turns; `names_own`: it names a subject of its own."""
    families = {c.split(":")[0] for c in cues}
    return {
        "kind_pointer": float(kind == "pointer"),
        "kind_described": float(kind == "described"),
        "kind_continuity": float(kind == "continuity"),
        **{f"cue_{f}": float(f in families) for f in CUE_FAMILIES},
        "similarity": similarity,
        "names_own": float(names_own),
        "log_terms": math.log1p(len(analyze(message))),
    }


class Searched(NamedTuple):
    """What the plan searches for a flagged message: "as_typed" (a new subject: the message
    alone), "instead" (the form replaces it), "beside" (the message, and the form beside it at
    `weight`) or "leads" (the form, and the message beside it at `weight`)."""

    how: Literal["as_typed", "instead", "beside", "leads"]
    weight: float = 1.0


class ShiftModel(BaseModel):
    """Logistic weights over `shift_features`, the threshold, the hedge under it, and where
    they came from. The defaults of the hedge are no hedge: a threshold only."""

    model_config = ConfigDict(frozen=True)
    weights: dict[str, float]
    intercept: float
    threshold: float
    ramp: float = Field(0.0, ge=0.0)
    replace_below: float = Field(1.0, ge=0.0)
    hedge_weight: float = Field(1.0, gt=0.0)
    provenance: dict[str, object] = {}

    def chance(self, features: Mapping[str, float]) -> float:
        """The chance the message opens a new subject."""
        z = self.intercept + sum(w * features.get(name, 0.0) for name, w in self.weights.items())
        return 1.0 / (1.0 + math.exp(-z))

    def replaces(self, chance: float) -> bool:
        """A pointer's form replaces the message (under `replace_below`); else both are searched."""
        return chance < min(self.replace_below, self.threshold)

    def form_weight(self, chance: float, base: float) -> float:
        """The weight of a form searched beside the message (weight 1) at this chance: `base`,
        falling linearly to 0 over the last `ramp` under the threshold; 0 (a new subject: the
        message as typed alone) at or over the threshold, or under `MIN_FORM_WEIGHT`."""
        if chance >= self.threshold:
            return 0.0
        weight = base if self.ramp <= 0.0 else base * min(1.0, (self.threshold - chance) / self.ramp)
        return weight if weight >= MIN_FORM_WEIGHT else 0.0

    def searched(self, chance: float | None, *, pointer: bool, base: float) -> Searched:
        """How a flagged message and its form are searched at this chance (None: the check is
        off). A pointer's form replaces the message, or leads it at `hedge_weight`; any other
        form goes beside the message at `base`; either falls away as the chance nears the threshold."""
        if chance is None:
            return Searched("instead") if pointer else Searched("beside", base)
        weight = self.form_weight(chance, self.hedge_weight if pointer else base)
        if weight == 0.0:
            return Searched("as_typed", 0.0)
        if not pointer:
            return Searched("beside", weight)
        return Searched("instead") if self.replaces(chance) else Searched("leads", 1.0 / weight)


@cache
def shift_model() -> ShiftModel:
    """The packaged model (trained by bench/training/topic_shift.py)."""
    raw = resources.files("querywise.understand.followup").joinpath("topic_shift.json").read_text(encoding="utf-8")
    return ShiftModel.model_validate(json.loads(raw))
