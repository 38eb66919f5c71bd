"""Payload conditions: the one filter language of the index, the CLI and the plan.

A `Where` is an AND of conditions on payload fields. Engines translate it into their own
filter type and execute it inside the engine; nothing here filters results in Python.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["AnyOf", "Condition", "describe", "Match", "Range", "Where", "WhereSyntaxError", "parse_where"]

Scalar = str | int | bool


class Match(BaseModel):
    """`field` equals `value` (for a list field: contains it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["match"] = "match"
    field: str
    value: Scalar


class AnyOf(BaseModel):
    """`field` equals one of `values` (for a list field: shares one)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["any"] = "any"
    field: str
    values: tuple[Scalar, ...] = Field(min_length=1)


class Range(BaseModel):
    """A numeric range on `field`; bounds left as None are open."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["range"] = "range"
    field: str
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None

    @model_validator(mode="after")
    def _has_a_bound(self) -> Range:
        if self.gt is None and self.gte is None and self.lt is None and self.lte is None:
            raise ValueError(f"range on {self.field!r} has no bound")
        return self


Condition = Annotated[Match | AnyOf | Range, Field(discriminator="kind")]


class Where(BaseModel):
    """All conditions must hold (logical AND)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    conditions: tuple[Condition, ...] = ()

    def __and__(self, other: Where) -> Where:
        return Where(conditions=self.conditions + other.conditions)

    def __bool__(self) -> bool:
        return bool(self.conditions)


class WhereSyntaxError(ValueError):
    """A `--where` expression that cannot be parsed."""


_EXPR = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(<=|>=|<|>|=)\s*(.+?)\s*$")
_OPS = {"<": "lt", "<=": "lte", ">": "gt", ">=": "gte"}


def _scalar(raw: str) -> Scalar:
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    if re.fullmatch(r"-?\d+", raw):
        return int(raw)
    return raw


def parse_where(exprs: list[str]) -> Where:
    """Parse CLI expressions: `field=value`, `field=a,b` (any of), `field<n`, `<=`, `>`, `>=`.

    >>> parse_where(["category=headphones", "price<200"]).conditions[1]
    Range(kind='range', field='price', gt=None, gte=None, lt=200.0, lte=None)
    """
    conditions: list[Match | AnyOf | Range] = []
    for expr in exprs:
        m = _EXPR.match(expr)
        if not m:
            raise WhereSyntaxError(
                f"cannot parse {expr!r}: expected field=value, field<n, field<=n, field>n or field>=n"
            )
        field, op, raw = m.groups()
        if op == "=":
            parts = [p.strip() for p in raw.split(",") if p.strip()]
            if len(parts) > 1:
                conditions.append(AnyOf(field=field, values=tuple(_scalar(p) for p in parts)))
            else:
                conditions.append(Match(field=field, value=_scalar(raw)))
        else:
            try:
                number = float(raw)
            except ValueError:
                raise WhereSyntaxError(f"{expr!r}: {op} needs a number, got {raw!r}") from None
            conditions.append(Range(field=field, **{_OPS[op]: number}))
    return Where(conditions=tuple(conditions))


def describe(condition: Match | AnyOf | Range) -> str:
    """A condition as people read it.

    >>> describe(Range(field="price", gte=10, lt=200))
    'price >= 10 and price < 200'
    """
    if isinstance(condition, Match):
        return f"{condition.field} = {condition.value}"
    if isinstance(condition, AnyOf):
        return f"{condition.field} in ({', '.join(map(str, condition.values))})"
    ops = [(">", condition.gt), (">=", condition.gte), ("<", condition.lt), ("<=", condition.lte)]
    return " and ".join(f"{condition.field} {op} {v:g}" for op, v in ops if v is not None)
