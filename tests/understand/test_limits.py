"""`[limits]`: a message or a history turn over its limit is a clear error (exit 2 on the command
line), older turns beyond the count are dropped, and the rewrite guard's limit applies to every
check of the plan."""

from __future__ import annotations

import contextvars
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querywise import cli
from querywise.checks.guard import DEFAULT_MAX_REWRITE_CHARS, check_rewrite
from querywise.config import ConfigError, LimitsSettings, Settings, load_settings
from querywise.files import InputError
from querywise.llm.provider import LLMError
from querywise.llm.scripted import ScriptedProvider
from querywise.llm.structured import conversation_key
from querywise.understand.limits import LimitError, within_limits
from querywise.understand.llm_plan import PlanNeeds, plan_call
from querywise.understand.pipeline import Understander

LIMITS = LimitsSettings()


def test_defaults_are_the_documented_ones() -> None:
    assert (LIMITS.max_message_chars, LIMITS.max_turn_chars, LIMITS.max_history_turns, LIMITS.max_rewrite_chars) == (4_000, 4_000, 20, 10_000)
    assert Settings().limits == LIMITS and LIMITS.max_rewrite_chars == DEFAULT_MAX_REWRITE_CHARS


def test_a_message_over_the_limit_is_an_input_error_that_says_which_limit() -> None:
    assert within_limits("x" * 4_000, [], LIMITS) == ("x" * 4_000, ())
    with pytest.raises(LimitError) as info:
        within_limits("x" * 4_001, [], LIMITS)
    assert isinstance(info.value, InputError)
    assert str(info.value) == "message: 4,001 characters, over the limit of 4,000 ([limits] max_message_chars)"


def test_a_history_turn_over_the_limit_is_an_error_naming_the_turn() -> None:
    with pytest.raises(LimitError, match=r"^history turn 2: 5,000 characters, over the limit of 4,000 \(\[limits\] max_turn_chars\)$"):
        within_limits("and the Pro?", ["ok", "y" * 5_000, "ok"], LIMITS)


def test_older_turns_beyond_the_count_are_dropped_not_read() -> None:
    history = ["z" * 9_999, *(f"turn {n}" for n in range(1, 21))]  # the oldest is over the limit, and dropped
    _, kept = within_limits("and the Pro?", history, LIMITS)
    assert [t.text for t in kept] == history[1:] and len(kept) == 20
    assert within_limits("hi", ["a", "b"], LimitsSettings(max_history_turns=0))[1] == ()


def test_limits_are_read_from_the_limits_section(tmp_path: Path) -> None:
    cfg = tmp_path / "q.toml"
    cfg.write_text("[limits]\nmax_message_chars = 100\nmax_history_turns = 3\n", encoding="utf-8")
    assert load_settings(cfg).limits == LimitsSettings(max_message_chars=100, max_history_turns=3)
    cfg.write_text("[limits]\nmax_message_chars = 0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"limits\.max_message_chars"):
        load_settings(cfg)


def test_the_planner_enforces_the_limits_before_any_move(hash_embedder: Any) -> None:
    understander = Understander(Settings(limits=LimitsSettings(max_message_chars=50, max_turn_chars=60)), embedder=hash_embedder)
    assert understander.plan("x" * 50).message == "x" * 50
    with pytest.raises(LimitError, match="message: 51 characters"):
        understander.plan("x" * 51)
    with pytest.raises(LimitError, match="history turn 1: 61 characters"):
        understander.plan("and the Pro?", history=["y" * 61])


def test_the_planner_sets_the_guard_limit_of_its_deployment(hash_embedder: Any) -> None:
    understander = Understander(Settings(limits=LimitsSettings(max_rewrite_chars=30)), embedder=hash_embedder)

    def in_a_plan() -> tuple[bool, bool]:
        understander.plan("warranty?")
        return check_rewrite("is it covered?", "x" * 31, []).ok, check_rewrite("is it covered?", "x" * 30, []).invented == ()

    assert contextvars.copy_context().run(in_a_plan) == (False, True)
    assert check_rewrite("is it covered?", "x" * 31, []).ok  # outside that context: the default limit


def test_an_llm_rewrite_longer_than_the_guard_reads_is_a_guard_rejection() -> None:
    message, history = "Does it cover water damage?", ("What's the warranty on the Aero X2?",)
    huge = "Does the Aero X2 warranty cover water damage? " * 50_000  # 2.4 MB
    provider = ScriptedProvider.from_records([{"task": "plan", "input": conversation_key(message, history), "output": {"standalone": huge}}])
    with pytest.raises(LLMError) as info:
        plan_call(provider, message, history, needs=PlanNeeds(rewrite=True), routes=[], filter_settings=Settings().filters,
                  catalog=None, access=None, timeout_s=1.0)
    assert info.value.reason == "guard_rejected"
    assert "longer than the guard reads" in info.value.detail and len(info.value.detail) < 200  # the text is not echoed


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch, hash_embedder: Any) -> Any:
    import querywise.understand.pipeline

    monkeypatch.setattr(querywise.understand.pipeline, "embedder_for", lambda settings, **_: hash_embedder)
    return hash_embedder


def test_the_command_line_reports_a_message_over_the_limit_with_exit_2(tmp_path: Path, no_model: Any) -> None:
    cfg = tmp_path / "q.toml"
    cfg.write_text('cache_dir = "cache"\n', encoding="utf-8")
    result = CliRunner().invoke(cli.app, ["plan", "x" * 4_001, "-c", str(cfg)])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert result.stderr.strip().splitlines()[-1] == "error: message: 4,001 characters, over the limit of 4,000 ([limits] max_message_chars)"
    result = CliRunner().invoke(cli.app, ["plan", "and the Pro?", "-c", str(cfg), "--history", "y" * 4_001])
    assert result.exit_code == 2 and "history turn 1: 4,001 characters" in result.stderr
    assert CliRunner().invoke(cli.app, ["plan", "x" * 4_000, "-c", str(cfg), "--json"]).exit_code == 0
