"""When an evaluated case counts as acceptable: a condition on one metric, or several AND-ed.

A condition is written `METRIC` (the metric is above 0: `hit@5`, the relevant id is in the top 5)
or `METRIC OP NUMBER` with OP one of `>=`, `>`, `<=`, `<`, `==` (`ndcg@10 >= 0.5`). Metric names
are those of `evaluation.metrics.parse_metric`; every metric lies between 0 and 1, so a number
outside that range is refused rather than making every case pass or fail.

    >>> rule = parse_rule(["hit@5", "ndcg@10>=0.5"])
    >>> rule.acceptable({"hit_rate@5": 1.0, "ndcg@10": 0.63})
    True
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from querywise.evaluation.metrics import Metric, MetricError, parse_metric

__all__ = ["DEFAULT_ACCEPTABLE", "AcceptableRule", "AcceptableRuleError", "Condition", "parse_condition", "parse_rule"]

#: The rule of `querywise eval --failures` when no --acceptable-if is given.
DEFAULT_ACCEPTABLE = ("hit@5",)

Op = Literal[">=", ">", "<=", "<", "=="]
_OPS: dict[Op, Callable[[float, float], bool]] = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq}
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_CONDITION = re.compile(rf"^(?P<metric>[^<>=!\s]+)\s*(?:(?P<op>>=|<=|==|>|<)\s*(?P<value>{_NUMBER}))?$")
_SYNTAX = "write METRIC (above 0, e.g. hit@5) or METRIC OP NUMBER with OP one of >=, >, <=, <, == (e.g. ndcg@10>=0.5)"


class AcceptableRuleError(ValueError):
    """A condition that cannot be parsed; the message quotes it and says how to write one."""


class Condition(BaseModel):
    """One metric compared with a number."""

    model_config = ConfigDict(frozen=True)
    metric: Metric
    op: Op = ">"
    value: float = 0.0
    text: str = ""  # as the user wrote it, spaces collapsed (what reports quote)

    def holds(self, scores: Mapping[str, float | None]) -> bool:
        """Whether the case's score of the metric meets the condition (no score: it does not)."""
        got = scores.get(self.metric.label)
        return got is not None and _OPS[self.op](got, self.value)


class AcceptableRule(BaseModel):
    """Every condition must hold."""

    model_config = ConfigDict(frozen=True)
    conditions: tuple[Condition, ...]

    @property
    def metrics(self) -> list[Metric]:
        """The metrics the rule reads, each once, in the order written."""
        return list(dict.fromkeys(c.metric for c in self.conditions))

    @property
    def label(self) -> str:
        """The rule as written: `hit@5`, `hit@5 and ndcg@10>=0.5`."""
        return " and ".join(c.text for c in self.conditions)

    @property
    def shown(self) -> int | None:
        """K when the rule is exactly "a relevant id in the top K" (`hit@K`, `hit@K >= 1`): the number
        of results the user's generator or page shows, which triage's `--context-k` should match.
        None for any other rule."""
        if len(self.conditions) != 1:
            return None
        c = self.conditions[0]
        # hit_rate is 0 or 1: each of these comparisons says "it is 1"
        means_a_hit = {">": c.value < 1, ">=": 0 < c.value <= 1, "==": c.value == 1}.get(c.op, False)
        return c.metric.k if c.metric.name == "hit_rate" and means_a_hit else None

    def acceptable(self, scores: Mapping[str, float | None]) -> bool:
        """Whether a case with these scores (metric label -> score) is acceptable."""
        return all(c.holds(scores) for c in self.conditions)


def parse_condition(text: str) -> Condition:
    """`"ndcg@10 >= 0.5"` -> Condition(ndcg@10, ">=", 0.5); `"hit@5"` -> hit_rate@5 > 0.

    >>> parse_condition("nDCG@10 >= .5").metric.label
    'ndcg@10'
    """
    written = " ".join(text.split())
    m = _CONDITION.match(text.strip())
    if not m:
        raise AcceptableRuleError(f"cannot read the condition {written!r}: {_SYNTAX}")
    try:
        metric = parse_metric(m.group("metric"))
    except MetricError as exc:
        raise AcceptableRuleError(f"condition {written!r}: {exc}") from None
    if m.group("op") is None:
        return Condition(metric=metric, text=written)
    value = float(m.group("value"))
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise AcceptableRuleError(f"condition {written!r}: {metric.label} lies between 0 and 1, so compare it with a number in that range")
    op = next(o for o in _OPS if o == m.group("op"))  # the pattern admits only these five
    return Condition(metric=metric, op=op, value=value, text=written)


def parse_rule(texts: Sequence[str] = DEFAULT_ACCEPTABLE) -> AcceptableRule:
    """Several conditions, all required; the same condition twice counts once. No condition at
    all is the default rule (`hit@5`)."""
    kept: dict[tuple[Metric, Op, float], Condition] = {}
    for text in texts or DEFAULT_ACCEPTABLE:
        c = parse_condition(text)
        kept.setdefault((c.metric, c.op, c.value), c)
    return AcceptableRule(conditions=tuple(kept.values()))
