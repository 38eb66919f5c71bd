"""Access constraints come from the authenticated session, and from nowhere else.

The session is checked strictly, because a lenient reading fails open: a key in another case
("Market"), an empty value or a missing field would otherwise mean no constraint at all.
Every configured field is required unless `[access] optional` lists it; keys are matched
exactly and unknown keys are refused.
"""

from __future__ import annotations

from collections.abc import Mapping

from querywise.conditions import Match, Where
from querywise.config import AccessSettings

__all__ = ["AccessError", "access_from_session"]


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
