"""Payload conditions: the one filter language of the index, the CLI and the plan.

A `Where` is an AND of conditions on payload fields. Engines translate it into their own
filter type and execute it inside the engine; search never filters results in Python.

`Where.matches(payload)` states what a condition means on one payload, with the semantics the
Qdrant engines apply, for checks that must not trust the engine (the evaluation's access probe):

- a field is a key path: `a.b` descends into objects, `a[]` into every element of an array,
  `a[2]` into one element; a list found at the end of the path counts as its elements (one level);
- `Match` and `AnyOf` compare typed values: a string equals a string, an integer an integer (not
  a float such as 179.0, not a bool), a bool a bool; a list field matches when an element does;
- `Range` holds when one number at the path (int or float, never a bool or a numeric string)
  lies within every bound of the range;
- a missing field, a null, an empty list or a value of another type meets no condition -- unless
  the condition says what a payload without the field gets (`missing`, `linked`: see `_without_field`);
- an empty `Where` matches every payload.

(One divergence is the embedded engine's, not the language's: qdrant-edge-py 0.9 hands a bool
match to the engine as the integer 0/1, so there `flag=true` finds `flag: 1` and not `flag: true`.
The server and `matches` compare bools as bools.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["AnyOf", "Condition", "Linked", "Match", "Missing", "NoneOf", "Range", "Where", "WhereSyntaxError", "describe", "empty_at", "parse_where", "values_at"]

# Bounded where the engines store numbers (int64, finite doubles): a value past them is a
# validation error where it enters (a request body, a plan), never an engine fault mid-search.
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
Scalar = str | Int64 | bool

_SEGMENT = re.compile(r"([^\[\]]+)((?:\[\d*\])*)")
_BRACKET = re.compile(r"\[(\d*)\]")


def values_at(payload: Mapping[str, Any], path: str) -> list[Any]:
    """The values a condition on `path` sees in `payload`, as Qdrant resolves a key path.

    >>> values_at({"shop": {"tags": ["a", "b"]}, "sizes": [{"eu": 42}, {"eu": 43}]}, "shop.tags")
    ['a', 'b']
    >>> values_at({"sizes": [{"eu": 42}, {"eu": 43}]}, "sizes[].eu"), values_at({"sizes": [{"eu": 42}]}, "sizes.eu")
    ([42, 43], [])
    """
    found: list[Any] = [payload]
    for part in path.split("."):
        m = _SEGMENT.fullmatch(part)
        if m is None:
            return []
        key, brackets = m.groups()
        found = [v[key] for v in found if isinstance(v, Mapping) and key in v]
        for index in _BRACKET.findall(brackets):  # a[]: every element of an array; a[2]: one
            arrays = [v for v in found if isinstance(v, list | tuple)]
            found = [e for v in arrays for e in (v if index == "" else v[int(index) : int(index) + 1])]
    return [e for v in found for e in (v if isinstance(v, list | tuple) else [v])]


def _equal(found: Any, value: Scalar) -> bool:
    """Typed equality: True is not 1, 179 is not 179.0, "1" is not 1."""
    if isinstance(value, bool) or isinstance(found, bool):
        return isinstance(found, bool) and isinstance(value, bool) and found == value
    if isinstance(value, int):
        return isinstance(found, int) and found == value
    return isinstance(found, str) and found == value


def _number(found: Any) -> bool:
    return isinstance(found, int | float) and not isinstance(found, bool)


def empty_at(payload: Mapping[str, Any], path: str) -> bool:
    """No value at `path`: the field is missing, null or an empty list (Qdrant's `is_empty`)."""
    return all(v is None for v in values_at(payload, path))


Missing = Literal["drop", "keep"]


class Linked(BaseModel):
    """The catalog entries a condition holds for, named in a payload's link `field` (see
    `_without_field`); `values` may be empty: no entry meets the condition."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    field: str
    values: tuple[Scalar, ...] = ()

    def matches(self, payload: Mapping[str, Any]) -> bool:
        return any(_equal(v, want) for v in values_at(payload, self.field) for want in self.values)


def _without_field(payload: Mapping[str, Any], field: str, missing: Missing, linked: Linked | None) -> bool:
    """Whether a condition on `field` holds for a payload that does not carry it.

    For corpora where only some documents carry a field (a help article has no price), a condition
    says what the others get: dropped (`missing="drop"`, the default and the engines' own
    semantics), kept (`missing="keep"`), or judged by the catalog entries they link to (`linked`:
    a help article about the Solace 7 passes "price < 300" when the Solace 7's catalog price does;
    a payload whose link field is empty falls back to `missing`). Engines run this inside the
    engine, as should[condition, must[is_empty(field), linked], must[is_empty(field),
    is_empty(link)] (keep only)], never by filtering results in Python."""
    if not empty_at(payload, field):
        return False
    if linked is not None and not empty_at(payload, linked.field):
        return linked.matches(payload)
    return missing == "keep"


class AnyOf(BaseModel):
    """`field` equals one of `values` (for a list field: shares one)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["any"] = "any"
    field: str
    values: tuple[Scalar, ...] = Field(min_length=1)
    # Left out of dumps at their defaults: a plain condition reads as it always has.
    missing: Missing = Field("drop", exclude_if=lambda v: v == "drop")
    linked: Linked | None = Field(None, exclude_if=lambda v: v is None)

    def matches(self, payload: Mapping[str, Any]) -> bool:
        return any(_equal(v, want) for v in values_at(payload, self.field) for want in self.values) or _without_field(
            payload, self.field, self.missing, self.linked
        )


class Match(BaseModel):
    """`field` equals `value` (for a list field: contains it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["match"] = "match"
    field: str
    value: Scalar
    # Left out of dumps at their defaults: a plain condition reads as it always has.
    missing: Missing = Field("drop", exclude_if=lambda v: v == "drop")
    linked: Linked | None = Field(None, exclude_if=lambda v: v is None)

    def matches(self, payload: Mapping[str, Any]) -> bool:
        return any(_equal(v, self.value) for v in values_at(payload, self.field)) or _without_field(
            payload, self.field, self.missing, self.linked
        )


class Range(BaseModel):
    """A numeric range on `field`; bounds left as None are open."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["range"] = "range"
    field: str
    gt: Finite | None = None
    gte: Finite | None = None
    lt: Finite | None = None
    lte: Finite | None = None
    # Left out of dumps at their defaults: a plain condition reads as it always has.
    missing: Missing = Field("drop", exclude_if=lambda v: v == "drop")
    linked: Linked | None = Field(None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _has_a_bound(self) -> Range:
        if self.gt is None and self.gte is None and self.lt is None and self.lte is None:
            raise ValueError(f"range on {self.field!r} has no bound")
        return self

    def matches(self, payload: Mapping[str, Any]) -> bool:
        return any(_number(v) and self._holds(v) for v in values_at(payload, self.field)) or _without_field(
            payload, self.field, self.missing, self.linked
        )

    def _holds(self, v: float) -> bool:
        return (
            (self.gt is None or v > self.gt)
            and (self.gte is None or v >= self.gte)
            and (self.lt is None or v < self.lt)
            and (self.lte is None or v <= self.lte)
        )


class NoneOf(BaseModel):
    """`field` equals none of `values` (for a list field: shares none; a payload without the field
    meets it): what a comparison excludes ("like the Solace 7 Pro": not the Solace 7 Pro itself)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["none"] = "none"
    field: str
    values: tuple[Scalar, ...] = Field(min_length=1)

    def matches(self, payload: Mapping[str, Any]) -> bool:
        return not any(_equal(v, want) for v in values_at(payload, self.field) for want in self.values)


Condition = Annotated[Match | AnyOf | Range | NoneOf, Field(discriminator="kind")]


class Where(BaseModel):
    """All conditions must hold (logical AND)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    conditions: tuple[Condition, ...] = ()

    def __and__(self, other: Where) -> Where:
        return Where(conditions=self.conditions + other.conditions)

    def __bool__(self) -> bool:
        return bool(self.conditions)

    def matches(self, payload: Mapping[str, Any]) -> bool:
        """Whether `payload` meets every condition (see the module docstring for the semantics).

        >>> parse_where(["markets=eu", "price<200"]).matches({"markets": ["eu", "uk"], "price": 179})
        True
        """
        return all(c.matches(payload) for c in self.conditions)


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
    conditions: list[Match | AnyOf | Range | NoneOf] = []
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


def describe(condition: Match | AnyOf | Range | NoneOf) -> str:
    """A condition as people read it.

    >>> describe(Range(field="price", gte=10, lt=200))
    'price >= 10 and price < 200'
    """
    if isinstance(condition, NoneOf):
        return f"{condition.field} not in ({', '.join(map(str, condition.values))})"
    if isinstance(condition, Match):
        said = f"{condition.field} = {condition.value}"
    elif isinstance(condition, AnyOf):
        said = f"{condition.field} in ({', '.join(map(str, condition.values))})"
    else:
        ops = [(">", condition.gt), (">=", condition.gte), ("<", condition.lt), ("<=", condition.lte)]
        said = " and ".join(f"{condition.field} {op} {v:g}" for op, v in ops if v is not None)
    if condition.linked is not None:
        said += f" (without {condition.field}: {condition.linked.field} naming a catalog entry that meets it"
        said += ", or neither field)" if condition.missing == "keep" else ")"
    elif condition.missing == "keep":
        said += f" (or no {condition.field})"
    return said
