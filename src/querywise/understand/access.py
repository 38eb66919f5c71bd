"""Access constraints come from the authenticated session, and from nowhere else."""

from __future__ import annotations

from collections.abc import Mapping

from querywise.conditions import Match, Where
from querywise.config import AccessSettings

__all__ = ["AccessError", "access_from_session"]


class AccessError(PermissionError):
    """The session lacks a field the deployment requires; nothing may be searched."""


def access_from_session(session: Mapping[str, str], settings: AccessSettings) -> Where:
    """One equality condition per configured session field that the session carries.

    Only the session mapping is read: no message text reaches this function, so no message can
    set or widen access.

    >>> access_from_session({"market": "eu"}, AccessSettings(fields={"market": "markets"}))
    Where(conditions=(Match(kind='match', field='markets', value='eu'),))
    """
    missing = [key for key in settings.required if not session.get(key)]
    if missing:
        raise AccessError(f"session lacks required field(s): {', '.join(missing)}")
    return Where(
        conditions=tuple(
            Match(field=payload_field, value=session[key])
            for key, payload_field in settings.fields.items()
            if session.get(key)
        )
    )
