"""What a triage is asked to do, as one value: the sample, the depths, the search mode, the SEs.

The depths' rule is stated here and nowhere else. `context_k` is how many results the generator
(or UI) is shown: a gold within the top `context_k` is a *generation* failure, one at ranks
`context_k + 1 .. k` a *ranking* failure, and the probes search `k` deep.

- `context_k`, when the user does not give it: the failures file's own rule (`made_by.context_k`,
  K of the `hit@K` rule `eval --failures` applied), else `DEFAULT_CONTEXT_K`.
- `k`, when the user does not give it: the deployment's `[rerank]` candidate depth (`top_n`) when it
  reranks -- *ranking* then means "within what the reranker sees" -- else at most
  `MAX_CORPUS_SHARE` of the corpus, capped at `DEFAULT_K` and never under `2 x context_k`. A gold
  inside a window that holds a large part of the corpus is there by chance as much as by
  ranking: on 386 chunks, k = 50 is 13% of them, and every failure would look like ranking.

An invalid value is never made (`context_k < k` when both are given; `resolve` checks the
resolved pair), so nothing downstream checks the depths again; the rule that chose them is kept
in `k_rule` and stated in the report.

    >>> TriageOptions(k=50, context_k=5, mode="dense")  # doctest: +SKIP
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from querywise.index.engine import Mode

__all__ = ["DEFAULT_CONTEXT_K", "DEFAULT_K", "MAX_CORPUS_SHARE", "TriageOptions", "depth_rule", "options_problem"]

DEFAULT_K = 50
#: What the generator (or the UI) is shown when neither the user nor the failures file says: the top 10.
DEFAULT_CONTEXT_K = 10
#: The probe depth is at most this share of the corpus (when no reranker depth says otherwise).
MAX_CORPUS_SHARE = 0.05


def depth_rule(n_chunks: int, context_k: int, rerank_top_n: int | None = None) -> tuple[int, str]:
    """The probe depth `k` for a corpus of `n_chunks` and the rule in words (see the module).

    >>> depth_rule(386, 10)[0], depth_rule(5183, 10)[0], depth_rule(5183, 10, rerank_top_n=30)[0]
    (20, 50, 30)
    """
    floor_k = 2 * context_k
    if rerank_top_n is not None and rerank_top_n > context_k:
        return rerank_top_n, f"k = {rerank_top_n}: the deployment's [rerank] top_n (ranking = within what its reranker sees)"
    share = math.floor(MAX_CORPUS_SHARE * n_chunks)
    k = max(floor_k, min(DEFAULT_K, share))
    why = (
        f"k = {k}: {MAX_CORPUS_SHARE:.0%} of the {n_chunks:,} chunks is {share:,}, capped at {DEFAULT_K} and at least "
        f"2 x context_k = {floor_k} (no [rerank] depth)"
    )
    return k, why


class TriageOptions(BaseModel):
    """The options of one triage; `k`, `context_k` and `mode` are stated in its report (None: by
    the rule above, resolved once the corpus and the failures file are known)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    k: int | None = Field(None, ge=2)  # depth of the probes and searches (None: `depth_rule`)
    context_k: int | None = Field(None, ge=1)  # generation = the gold within the top context_k (None: the file's rule)
    mode: Mode = "hybrid"  # how probes and the original question search
    sample: int | None = Field(None, ge=1)  # triage a random sample of this many failures (None: all)
    seed: int = 0  # the sample's seed
    fpc: bool = False  # apply the finite-population correction to the SEs
    eval_total: int | None = None  # questions in the eval set (with `acceptable`: points of traffic)
    acceptable: float | None = None  # acceptable rate of the eval set, 0..1
    k_rule: str = ""  # how k and context_k were chosen (filled by `resolve`)

    @model_validator(mode="after")
    def _depths(self) -> TriageOptions:
        if self.k is not None and self.context_k is not None and self.context_k >= self.k:
            raise ValueError(f"--context-k ({self.context_k}) must be below --k ({self.k}): ranking is the gold at ranks {self.context_k + 1}..k")
        return self

    @property
    def resolved(self) -> bool:
        return self.k is not None and self.context_k is not None

    @property
    def depths(self) -> tuple[int, int]:
        """(k, context_k); unresolved ones read as `DEFAULT_K` and `DEFAULT_CONTEXT_K` (a report
        counted from cases alone, with no corpus to size k by). `triage` and `probe_cases` resolve first."""
        return self.k if self.k is not None else DEFAULT_K, self.context_k if self.context_k is not None else DEFAULT_CONTEXT_K

    def resolve(self, *, n_chunks: int, file_context_k: int | None = None, rerank_top_n: int | None = None) -> TriageOptions:
        """The options with `k` and `context_k` chosen by the rule (given values kept) and the rule
        stated in `k_rule`; a `ValueError` when the pair breaks `context_k < k`."""
        if self.resolved and self.k_rule:
            return self
        if self.context_k is not None:
            context_k, why_c = self.context_k, f"context_k = {self.context_k}: given"
        elif file_context_k is not None:
            context_k, why_c = file_context_k, f"context_k = {file_context_k}: the failures file's rule (hit@{file_context_k})"
        else:
            context_k, why_c = DEFAULT_CONTEXT_K, f"context_k = {DEFAULT_CONTEXT_K}: the default (the failures file states no context)"
        if self.k is not None:
            k, why_k = self.k, f"k = {self.k}: given"
        else:
            k, why_k = depth_rule(n_chunks, context_k, rerank_top_n)
        if context_k >= k:
            raise ValueError(f"context_k ({context_k}) must be below k ({k}): ranking is the gold at ranks {context_k + 1}..k")
        return self.model_copy(update={"k": k, "context_k": context_k, "k_rule": f"{why_k}; {why_c}"})


def options_problem(exc: ValidationError) -> str:
    """An invalid `TriageOptions` in one line, as a person reads it (the rule's own words)."""
    return "; ".join(str(e["msg"]).removeprefix("Value error, ") if not e["loc"] else f"{e['loc'][0]}: {e['msg']}" for e in exc.errors())
