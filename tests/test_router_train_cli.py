"""`querywise router-train` through typer's runner: the plan before anything loads, then progress
with an estimate measured on the first batches (a real fine-tune on a handful of examples)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querywise import cli

# Our own shop's routes: 6 examples each, so 3 pairs a route: 6 steps over 2 epochs at batch size 2.
ROWS = [
    ("where is my parcel", "orders"), ("track my delivery", "orders"), ("has it shipped", "orders"),
    ("when does my order arrive", "orders"), ("is my package on the way", "orders"), ("order status please", "orders"),
    ("refund please", "refunds"), ("I want my money back", "refunds"), ("return for a refund", "refunds"),
    ("refund my broken speaker", "refunds"), ("how long do refunds take", "refunds"), ("reverse the double charge", "refunds"),
    ("tell me a joke", "oos"),
]  # fmt: skip


@pytest.mark.model
def test_router_train_prints_its_plan_first_then_progress_and_an_estimate(tmp_path: Path) -> None:
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps({"text": t, "label": lab}) + "\n" for t, lab in ROWS), encoding="utf-8")
    result = CliRunner().invoke(cli.app, ["router-train", "--train", str(train), "--out", str(tmp_path / "enc"), "--batch-size", "2", "--epochs", "2"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    # the plan comes first, before torch or the model load
    assert lines[0] == "plan: 12 examples over 2 labels (1 labelled oos left out), 2 epoch(s) of 6 pairs, batch size 2: 6 steps; estimate after the first 3"
    assert lines[1] == "loading the encoder..."
    assert lines[2] == "training (6 steps)..."
    # (not a terminal here: one line per phase and per tenth of the steps, no live bar)
    estimate = next(line for line in lines if line.startswith("estimate:"))
    # A loaded machine can take over a minute: durations read "1m 06s" from there on.
    duration = r"(?:\d+m )?\d+s"
    assert re.fullmatch(rf"estimate: training: {duration} for 6 steps \([\d.]+ s a step over the first 3\), about {duration} to go", estimate)
    assert lines.index(estimate) < lines.index("saving...")
    assert re.fullmatch(r"  training: 6/6 steps, \d+s elapsed, about 0s left", lines[lines.index("saving...") - 1])
    assert lines[-1].startswith(f"wrote {tmp_path / 'enc'} in ")
    manifest = json.loads((tmp_path / "enc" / "querywise-encoder.json").read_text())
    assert (manifest["n_examples"], manifest["n_routes"]) == (12, 2)


def test_router_train_refuses_too_few_examples_before_loading_anything(tmp_path: Path) -> None:
    train = tmp_path / "train.jsonl"
    train.write_text('{"text": "hi", "label": "greet"}\n{"text": "hello", "label": "greet"}\n', encoding="utf-8")
    result = CliRunner().invoke(cli.app, ["router-train", "--train", str(train), "--out", str(tmp_path / "enc")])
    assert result.exit_code == 2 and "at least 2 routes" in result.stderr
    assert "plan:" not in result.stderr and not (tmp_path / "enc").exists()
