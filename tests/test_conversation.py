from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from querywise.conversation import Turn, TurnError, Turns, as_turns, parse_turn, texts, user_texts


def test_a_string_is_a_user_turn_and_an_object_keeps_its_role() -> None:
    turns = as_turns(["How long is the warranty?", {"role": "assistant", "text": "Two years."}, {"text": "and the Pro?"}])
    assert turns == (Turn(text="How long is the warranty?"), Turn(role="assistant", text="Two years."), Turn(text="and the Pro?"))
    assert texts(turns) == ["How long is the warranty?", "Two years.", "and the Pro?"]
    assert user_texts(turns) == ["How long is the warranty?", "and the Pro?"]


def test_chat_logs_that_say_agent_mean_the_assistant() -> None:
    assert parse_turn({"role": "agent", "text": "Online or in person."}).role == "assistant"


@pytest.mark.parametrize(("value", "says"), [
    (3, "expected a string or"),
    ({"role": "system", "text": "x"}, "history turn: role:"),
    ({"role": "user"}, "history turn: text:"),
    ({"role": "user", "text": "x", "extra": 1}, "history turn: extra:"),
])
def test_a_bad_turn_says_what_a_turn_is(value: object, says: str) -> None:
    with pytest.raises(TurnError, match=says) as info:
        parse_turn(value)
    assert "role" in str(info.value)


def test_file_models_read_histories_of_strings_and_turns() -> None:
    class Row(BaseModel):
        history: Turns = ()

    assert Row(history=["a", {"role": "assistant", "text": "b"}]).history == (Turn(text="a"), Turn(role="assistant", text="b"))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="history turn"):
        Row(history=[{"role": "bot", "text": "b"}])  # type: ignore[list-item]
