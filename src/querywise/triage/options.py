"""What a triage is asked to do, as one value: the sample, the depths, the search mode, the SEs.

The depths' rule is stated here and nowhere else: the probes search `k` deep, and `context_k` (how
many results the generator or UI is shown) must be at least 1 and below `k`, since a gold within
the top `context_k` is a *generation* failure and one at ranks `context_k + 1 .. k` a *ranking*
failure. The command line, the service's jobs and the benchmarks build a `TriageOptions`; an
invalid one is never made, so nothing downstream checks the depths again.

    >>> TriageOptions(k=50, context_k=5, mode="dense")  # doctest: +SKIP
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from querywise.index.engine import Mode

__all__ = ["DEFAULT_CONTEXT_K", "DEFAULT_K", "TriageOptions", "options_problem"]

DEFAULT_K = 50
#: What the generator (or the UI) is shown when the user does not say: the top 10.
DEFAULT_CONTEXT_K = 10


class TriageOptions(BaseModel):
    """The options of one triage; `k`, `context_k` and `mode` are stated in its report."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    k: int = Field(DEFAULT_K, ge=2)  # depth of the probes and searches
    context_k: int = Field(DEFAULT_CONTEXT_K, ge=1)  # generation = the gold within the top context_k
    mode: Mode = "hybrid"  # how probes and the original question search
    sample: int | None = Field(None, ge=1)  # triage a random sample of this many failures (None: all)
    seed: int = 0  # the sample's seed
    fpc: bool = False  # apply the finite-population correction to the SEs
    eval_total: int | None = None  # questions in the eval set (with `acceptable`: points of traffic)
    acceptable: float | None = None  # acceptable rate of the eval set, 0..1

    @model_validator(mode="after")
    def _depths(self) -> TriageOptions:
        if self.context_k >= self.k:
            raise ValueError(f"--context-k ({self.context_k}) must be below --k ({self.k}): ranking is the gold at ranks {self.context_k + 1}..k")
        return self


def options_problem(exc: ValidationError) -> str:
    """An invalid `TriageOptions` in one line, as a person reads it (the rule's own words)."""
    return "; ".join(str(e["msg"]).removeprefix("Value error, ") if not e["loc"] else f"{e['loc'][0]}: {e['msg']}" for e in exc.errors())
