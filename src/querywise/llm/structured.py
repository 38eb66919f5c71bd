"""One structured call: a versioned prompt, the user's content, a JSON schema, and the answer
read strictly into a pydantic model. An answer the model does not fit raises
`LLMError("schema_violation")`, exactly like a failed call, so callers have one failure path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from querywise.conversation import Turn, as_turns
from querywise.llm.prompt import load_prompt
from querywise.llm.provider import LLMError, Message, Provider, StructuredRequest, StructuredResult

__all__ = ["call_structured", "conversation_key", "user_content"]

M = TypeVar("M", bound=BaseModel)


def _said(turn: str | Turn) -> str:
    # A user turn reads as its words (so a history of strings keys as it always did); an
    # assistant turn is marked, so that the same words said by the other side key apart.
    if not isinstance(turn, Turn):
        return turn
    return turn.text if turn.role == "user" else f"[assistant] {turn.text}"


def conversation_key(message: str, history: Sequence[str | Turn] = ()) -> str:
    """Earlier turns and the message, one per line: the input a response is keyed by."""
    return "\n".join([*(_said(t) for t in history), message])


def user_content(message: str, history: Sequence[str | Turn] = (), extra: str = "") -> str:
    parts = []
    if history:
        turns = as_turns(history)
        parts.append("Conversation so far (oldest first):\n" + "\n".join(f"- {t.role}: {t.text}" for t in turns))
    parts.append(f"Message: {message}")
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)


def call_structured(
    provider: Provider,
    task: str,
    model: type[M],
    schema: dict[str, Any],
    *,
    key: str,
    content: str,
    timeout_s: float,
    max_tokens: int = 400,
) -> tuple[M, StructuredResult, str]:
    """One structured call of `task`, its answer read strictly into `model`; also returns the
    call's result (usage, latency) and the prompt's version."""
    prompt = load_prompt(task)
    request = StructuredRequest(
        name=task, instructions=prompt.instructions, messages=(Message("user", content),), schema=schema,
        key=key, timeout_s=timeout_s, max_tokens=max_tokens,
    )
    result = provider.complete(request)
    try:
        value = model.model_validate(result.parsed)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors())
        raise LLMError("schema_violation", problems, usage=result.usage, latency_s=result.latency_s) from None
    return value, result, prompt.version
