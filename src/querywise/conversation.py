"""The conversation before a message: turns with roles.

A history is a sequence of turns, oldest first. A turn is a user turn or an assistant turn
(`{"role": "user" | "assistant", "text": ...}`); a bare string is a user turn, so a list of
strings stays a valid history. Assistant turns are the answers (or the passages an answer was
grounded on): real follow-ups point into them ("how do I apply for *that*?"), and a name the
assistant said is not invented when a rewrite uses it.

>>> as_turns(["How long is the warranty?", {"role": "assistant", "text": "Two years."}])[1].role
'assistant'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

__all__ = ["Role", "Turn", "TurnError", "Turns", "as_turns", "parse_turn", "texts", "user_texts"]

Role = Literal["user", "assistant"]
ROLES: tuple[Role, ...] = ("user", "assistant")


class Turn(BaseModel):
    """One earlier turn of the conversation."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Role = "user"
    text: str

    def __str__(self) -> str:
        return self.text


class TurnError(ValueError):
    """A history entry that is neither a string nor a `{"role", "text"}` object."""


def parse_turn(value: object) -> Turn:
    """One history entry as a `Turn`: a string is a user turn; an object needs `text` and may give
    `role`: `user` or `assistant` (`agent`, as doc2dial and many chat logs name the assistant,
    is read as `assistant`)."""
    if isinstance(value, Turn):
        return value
    if isinstance(value, str):
        return Turn(text=value)
    if isinstance(value, Mapping):
        data = dict(value)
        if data.get("role") == "agent":
            data["role"] = "assistant"
        try:
            return Turn.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "turn"
            raise TurnError(f"history turn: {where}: {first['msg']} (a turn is a string or {{\"role\": \"user\"|\"assistant\", \"text\": ...}})") from None
    raise TurnError(f"history turn: expected a string or {{\"role\", \"text\"}} object, got {type(value).__name__}")


def as_turns(history: Iterable[object]) -> tuple[Turn, ...]:
    """Every entry of `history` as a `Turn` (see `parse_turn`)."""
    return tuple(parse_turn(t) for t in history)


def _turns_field(value: object) -> object:
    if isinstance(value, list | tuple):
        return [parse_turn(t) for t in value]
    return value  # pydantic says what is wrong with it


#: A history field of a file model (case, rewrite row, failure): a JSON list whose items are
#: strings (user turns) or `{"role", "text"}` objects, read as a tuple of `Turn`s.
Turns = Annotated[tuple[Turn, ...], BeforeValidator(_turns_field)]


def texts(history: Iterable[str | Turn]) -> list[str]:
    """The words of every turn, user and assistant, oldest first (a string is its own words)."""
    return [t.text if isinstance(t, Turn) else t for t in history]


def user_texts(history: Iterable[str | Turn]) -> list[str]:
    """The user turns' words, oldest first (a string is a user turn)."""
    return [t.text if isinstance(t, Turn) else t for t in history if not isinstance(t, Turn) or t.role == "user"]
