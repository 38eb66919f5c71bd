"""Access constraints come from the authenticated session, and from nowhere else.

The session is checked strictly, because a lenient reading fails open: a key in another case
("Market"), an empty value or a missing field would otherwise mean no constraint at all.
Every configured field is required unless `[access] optional` lists it; keys are matched
exactly and unknown keys are refused. A front end that reads the session out of a larger set of
claims (a JWT) keeps the claims it does not know, but refuses one that only nearly names an
access key (`near_misses`): with an optional field, a "Family" or "famіly" (Cyrillic і) claim
skipped as unknown would drop that constraint silently.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping

from querywise.conditions import Match, Where
from querywise.config import AccessSettings

__all__ = ["AccessError", "access_from_session", "check_session", "near_misses"]

# Separators a key may be written with that do not make it another key to a reader.
_SEPARATORS = frozenset(" _-.")


class AccessError(PermissionError):
    """The session cannot be turned into access constraints; nothing may be searched."""


def access_from_session(session: Mapping[str, str], settings: AccessSettings) -> Where:
    """One equality condition per configured session field.

    Only the session mapping is read: no message text reaches this function, so no message can
    set or widen access. Raises `AccessError` for an unknown key, an empty value, or a missing
    field that is not optional.

    >>> access_from_session({"market": "eu"}, AccessSettings(fields={"market": "markets"}))
    Where(conditions=(Match(kind='match', field='markets', value='eu'),))
    """
    check_session(session)
    unknown = sorted(k for k in session if k not in settings.fields and k != settings.holdings)  # holdings: context, never access
    if unknown:
        known = ", ".join(settings.fields) or "none: this deployment has no [access] fields"
        raise AccessError(f"unknown session key(s) {', '.join(map(repr, unknown))}; keys are matched exactly (known: {known})")
    empty = sorted(k for k, v in session.items() if not str(v).strip())
    if empty:
        raise AccessError(f"empty session value for {', '.join(empty)}")
    missing = [k for k in settings.fields if k not in session and k not in settings.optional]
    if missing:
        raise AccessError(f"session lacks required field(s): {', '.join(missing)} (mark a field optional in [access] optional to allow that)")
    return Where(conditions=tuple(Match(field=payload, value=session[key]) for key, payload in settings.fields.items() if key in session))


def check_session(session: object) -> None:
    """`TypeError` unless `session` is a mapping of strings to strings (`session="market=eu"`
    is a mistake to name, not a string to iterate)."""
    if not isinstance(session, Mapping):
        raise TypeError(f"session must be a mapping of access keys to strings, e.g. {{'market': 'eu'}}, not {type(session).__name__}")
    bad = sorted(repr(k) for k, v in session.items() if not isinstance(k, str) or not isinstance(v, str))
    if bad:
        raise TypeError(f"session keys and values must be strings: {', '.join(bad)}")


def _fold(key: str) -> str:
    """`key` as a reader sees it: compatibility forms, case, invisible characters and separators aside."""
    folded = unicodedata.normalize("NFKC", key).casefold()
    return "".join(c for c in folded if c not in _SEPARATORS and not c.isspace() and unicodedata.category(c) != "Cf")


def _looks_like(key: str, field: str) -> bool:
    """`key` reads as `field`: the same folded letters, where any non-ASCII letter of `key` may be
    a look-alike of the field's (Cyrillic і, Greek ο: no table lists every confusable, so a
    non-ASCII letter in the place of an ASCII one counts as one)."""
    k, f = _fold(key), _fold(field)
    return len(k) == len(f) and all(a == b or not a.isascii() for a, b in zip(k, f, strict=True))


def near_misses(keys: Iterable[str], settings: AccessSettings) -> list[str]:
    """The keys that are not an access key but read as one ("Market", "MARKET", "market ",
    "mаrket" with a Cyrillic а).

    >>> near_misses(["sub", "Market", "market"], AccessSettings(fields={"market": "markets"}))
    ['Market']
    """
    return [k for k in keys if k not in settings.fields and any(_looks_like(k, f) for f in settings.fields)]
