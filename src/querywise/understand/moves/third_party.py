"""Third party: a request about someone else's account or data asks for verification and searches
nothing (`understand.third_party`), whatever the route. No LLM: a stated rule, fail closed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from querywise.plan import Ask, TraceStep
from querywise.understand.draft import Draft, Resources
from querywise.understand.moves.base import BaseMove
from querywise.understand.third_party import other_person

__all__ = ["ThirdParty"]


class ThirdParty(BaseMove):
    name = "third_party"

    def __init__(self, resources: Resources) -> None:
        super().__init__(resources)
        s = resources.settings
        # Someone else's account is a question only where users have accounts: a deployment with a
        # session account or a high-stakes route. A help centre on benefits answers "my husband's
        # benefits" as any other question.
        self._accounts = s.access.account is not None or bool(s.routing.high_stakes)

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        if not self._accounts:
            return draft, []
        # Read whole: a second ask may be the one about someone else.
        other = other_person(draft.whole, draft.session, self.settings.access)
        if other is None:
            return draft, []
        step = TraceStep(move="third_party", status="ran", reason=f"{other.rule}: {other.words!r}", changed="ask for verification",
                         details={"rule": other.rule, "words": other.words})
        return replace(draft, action=Ask(question=self.settings.access.third_party_question),
                       unsearched="a request about another person's account: fail closed"), [step]
