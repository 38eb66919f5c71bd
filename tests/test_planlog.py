"""The plan log: the raw message next to its plan, private, without session values, rotated."""

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from querywise.conditions import parse_where
from querywise.plan import PlanQuery, QueryPlan
from querywise.planlog import REDACTED, PlanLog, read_plans

SECURED = QueryPlan(message="And the Pro?", route="kb_search", queries=[PlanQuery(text="And the Pro?", kind="original")],
                    access=parse_where(["markets=eu", "tenant=acme-7"]))


def test_plans_are_logged_next_to_the_raw_message(tmp_path: Path) -> None:
    log = PlanLog(tmp_path / "logs" / "plans.jsonl")
    b = QueryPlan(message="where is my order", route="account")
    log.append(SECURED, history=["warranty on the Solace 7?"], session={"market": "eu", "tenant": "acme-7"})
    log.append(b)
    (message_a, logged_a), (message_b, logged_b) = read_plans(log.path)
    assert (message_a, message_b, logged_b) == ("And the Pro?", "where is my order", b)
    assert logged_a.queries == SECURED.queries and '"session_keys": ["market", "tenant"]' in log.path.read_text()


@pytest.mark.parametrize("mode", ["redact", "hash", "keep"])
def test_session_values_are_redacted_unless_the_deployment_keeps_them(tmp_path: Path, mode: str) -> None:
    log = PlanLog(tmp_path / "plans.jsonl", session_values=mode)  # type: ignore[arg-type]
    log.append(SECURED, session={"market": "eu", "tenant": "acme-7"})
    text = log.path.read_text()
    values = [c["value"] for c in json.loads(text)["plan"]["access"]["conditions"]]
    if mode == "redact":
        assert values == [REDACTED, REDACTED] and "acme-7" not in text
    elif mode == "hash":
        assert values == ["sha256:" + hashlib.sha256(v.encode()).hexdigest()[:16] for v in ("eu", "acme-7")] and "acme-7" not in text
    else:
        assert values == ["eu", "acme-7"]


def test_the_log_is_private_even_if_it_was_created_readable(tmp_path: Path) -> None:
    path = tmp_path / "plans.jsonl"
    path.write_text("")
    os.chmod(path, 0o644)
    PlanLog(path).append(SECURED)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    fresh = PlanLog(tmp_path / "new" / "plans.jsonl")
    fresh.append(SECURED)
    assert stat.S_IMODE(fresh.path.stat().st_mode) == 0o600


def test_the_log_rotates_by_size_and_keeps_the_newest_backups(tmp_path: Path) -> None:
    log = PlanLog(tmp_path / "plans.jsonl", max_bytes=1_000, backups=2)
    for i in range(12):
        log.append(SECURED.model_copy(update={"message": f"message {i}"}))
    files = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock"))
    assert files == ["plans.jsonl", "plans.jsonl.1", "plans.jsonl.2"]
    assert all(p.stat().st_size <= 1_000 for p in tmp_path.glob("plans.jsonl*") if not p.name.endswith(".lock"))
    newest = [m for m, _ in read_plans(tmp_path / "plans.jsonl")]
    assert newest[-1] == "message 11"
    kept = [m for f in ("plans.jsonl.2", "plans.jsonl.1", "plans.jsonl") for m, _ in read_plans(tmp_path / f)]
    assert kept == sorted(kept, key=lambda m: int(m.split()[1])) and kept[-1] == "message 11"  # oldest dropped, order kept
