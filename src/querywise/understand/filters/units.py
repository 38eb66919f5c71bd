"""Units, through pint: a stated quantity converted to the unit a filter field is stored in.

Physical units are pint's own ("g", "kg", "oz", "mm", "inch", "hour", "day", ...). Currencies are
one pint dimension, valued by the rate table the money reader is given (USD per unit, fixed, not
live), each with a minor unit: `usd_cents` is 0.01 usd, `eur_cents` 0.01 eur. A field whose
`unit` pint cannot read, or a quantity of another dimension, is no conversion: the caller drops
the constraint with the reason returned here, never silently."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from querywise.checks.filters import format_number

if TYPE_CHECKING:
    import pint

__all__ = ["MINOR_SUFFIX", "convert", "currency_of", "dimension_of", "load", "parse_unit"]

#: A currency's minor unit is its code with this suffix ("usd_cents").
MINOR_SUFFIX = "_cents"


@lru_cache(maxsize=8)
def _registry(rates: tuple[tuple[str, float], ...]) -> pint.UnitRegistry:
    """One registry per rate table (pint builds its definitions once: about 0.2 s)."""
    import pint

    ureg = pint.UnitRegistry()
    ureg.define("usd = [currency]")
    for code, rate in rates:
        if code != "usd":
            ureg.define(f"{code} = {rate!r} * usd")
    for code, _ in rates:
        ureg.define(f"{code}{MINOR_SUFFIX} = 0.01 * {code}")
    return ureg


def _ureg(rates: Mapping[str, float]) -> pint.UnitRegistry:
    return _registry(tuple(sorted((k.lower(), float(v)) for k, v in rates.items())))


def load(rates: Mapping[str, float]) -> None:
    """Build the registry now (a deployment with unit fields does it at start-up, not on a message)."""
    _ureg(rates)


def currency_of(unit: str | None, rates: Mapping[str, float]) -> str | None:
    """The currency code of a money unit ("usd", "usd_cents" -> "usd"), else None."""
    if not unit:
        return None
    code = unit.lower().removesuffix(MINOR_SUFFIX)
    return code if code in {k.lower() for k in rates} else None


def parse_unit(word: str, rates: Mapping[str, float]) -> Any | None:
    """pint's unit for `word` ("grams", "kg", "in", "hrs"), or None if pint does not know it."""
    import pint

    try:
        unit = _ureg(rates).parse_units(word.strip().lower())
    except (pint.errors.PintError, AttributeError, TypeError, ValueError, SyntaxError):
        return None
    return None if unit.dimensionless else unit


def dimension_of(unit: str, rates: Mapping[str, float]) -> str | None:
    """The dimensionality of a unit as text ("[mass]"), or None if pint does not know it."""
    parsed = parse_unit(unit, rates)
    return str(parsed.dimensionality) if parsed is not None else None


def convert(amount: float, unit: str, field_unit: str, rates: Mapping[str, float]) -> tuple[float | None, str]:
    """`amount` `unit` in `field_unit`, and a note (the conversion, or why there is none)."""
    if unit.lower() == field_unit.lower():
        return amount, ""
    source, target = parse_unit(unit, rates), parse_unit(field_unit, rates)
    if target is None:
        return None, f"cannot convert {unit} to {field_unit}: pint does not know the field's unit {field_unit!r}"
    if source is None:
        return None, f"cannot convert {unit} to {field_unit}: pint does not know {unit!r}"
    if source.dimensionality != target.dimensionality:
        return None, f"cannot convert {unit} to {field_unit}: {source.dimensionality} is not {target.dimensionality}"
    value = float(_ureg(rates).Quantity(amount, source).to(target).magnitude)
    value = round(value, 6)
    how = " at the fixed rate table" if "[currency]" in str(target.dimensionality) and currency_of(unit, rates) != currency_of(field_unit, rates) else ""
    return value, f"{format_number(amount)} {unit} = {format_number(value)} {field_unit}{how}"
