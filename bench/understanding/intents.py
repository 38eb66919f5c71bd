"""Several intents (#15): the cut of `understand.intents.split_asks` and the plan's choice, on the demo.

    .venv/bin/python -m bench.understanding.intents

Two-ask messages are made from the demo's held-out labelled messages (src/querywise/demo/
routes_test.jsonl, never used to fit the router): every ordered pair of messages of different
routes, joined with ", and ". Measured: the share cut into exactly the two asks, and, through the
planner, the share whose plan serves the first ask's route and leaves the second with its route.
False cuts: single messages (the held-out labels and the demo eval cases) that the planner cuts
into asks of different routes, so that it serves only part of them.

Writes bench/results/intents.json and intents.md.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from bench import log
from bench.report import publish

COMMAND = ".venv/bin/python -m bench.understanding.intents"


def main() -> None:
    from querywise import QueryWise, load_settings
    from querywise.demo import demo_file
    from querywise.understand.intents import split_asks

    labelled = [json.loads(line) for line in demo_file("routes_test.jsonl").read_text().splitlines() if line.strip()]
    pairs = [(a, b) for a, b in itertools.permutations(labelled, 2) if a["label"] != b["label"]][::7]  # every 7th: bounded
    settings = load_settings(demo_file("querywise.toml"))
    cut = served = 0
    with QueryWise(settings) as qw:
        for a, b in pairs:
            joined = f"{a['text'].rstrip('?.! ')}, and {b['text'][0].lower()}{b['text'][1:]}"
            cut += len(split_asks(joined)) == 2
            plan = qw.plan(joined, session={"market": "eu"})
            served += plan.route == a["label"] and [x.route for x in plan.left] == [b["label"]]
        singles = [c["text"] for c in labelled] + [json.loads(line)["message"] for line in demo_file("eval_cases.jsonl").read_text().splitlines() if line.strip()]
        false_cut = [t for t in singles if qw.plan(t, session={"market": "eu"}).left]
    result = {"pairs": len(pairs), "cut_rate": round(cut / len(pairs), 4), "served_and_left_rate": round(served / len(pairs), 4),
              "singles": len(singles), "false_cuts": len(false_cut), "false_cut_examples": false_cut[:10]}
    path = publish("intents", result, command=COMMAND, render=markdown)
    log(path.with_suffix(".md").read_text(encoding="utf-8"))


def markdown(result: dict[str, Any]) -> str:
    """intents.md from intents.json."""
    md = ["# Several intents", "", f"Command: `{result['machine']['command']}`.", "",
          f"{result['pairs']} two-ask messages from held-out demo labels of different routes: cut into the two asks "
          f"{result['cut_rate']:.3f}; plan serves the first ask's route and leaves the second with its route {result['served_and_left_rate']:.3f} "
          "(the router's own accuracy on the parts bounds this).", "",
          f"Single messages cut into asks of different routes (only part served): {result['false_cuts']} of {result['singles']}"
          + (": " + "; ".join(repr(t) for t in result["false_cut_examples"]) if result["false_cut_examples"] else "") + ".", ""]
    return "\n".join(md)


if __name__ == "__main__":
    main()
