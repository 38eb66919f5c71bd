"""What bench/service/load.py and its helpers share: the load's settings (users, the test secret,
the openers and closers of unique messages), the demo messages, and the LLM run's fake provider
(its process and the config pointing the service at it). Not in service_load.py, which runs as
__main__: a helper importing it would load a second copy."""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import WORK

HERE = WORK / "service-load"
INDEX = HERE / "index"
SECRET_ENV, SECRET = "QUERYWISE_JWT_SECRET", "bench-service-load-secret-of-at-least-32-bytes"
KEY_ENV = "QW_BENCH_LOAD_OPENAI_KEY"
MARKET = "eu"
USERS, SPAWN_RATE = 50, 50.0
FOLLOW_UP_SHARE = 0.3
ONE_CALL = (600, 80)  # the fake's tokens per plan call: the cost model's one structured call
OPENERS = ["", "Hi,", "Hello,", "Hey,", "Quick question:", "Sorry to bother you,", "Good morning,", "Hi there,", "Hello again,",
           "One more thing:", "Excuse me,", "Hey team,"]  # fmt: skip
CLOSERS = ["", "thanks", "thank you", "thanks!", "cheers", "please", "many thanks", "thx", "ty", "please help", "any idea?", "asap"]


# --- messages ------------------------------------------------------------------------------------


def messages() -> dict[str, list[dict[str, Any]]]:
    """The demo's first turns and follow-ups (with their history), deduplicated."""
    from querywise.demo import demo_file
    from querywise.files import read_jsonl

    first: dict[str, dict[str, Any]] = {}
    follow: dict[str, dict[str, Any]] = {}
    for _, rec in read_jsonl(demo_file("eval_cases.jsonl")):
        item = {"message": rec["message"], "history": rec.get("history") or []}
        (follow if item["history"] else first)[json.dumps(item)] = item
    for _, rec in read_jsonl(demo_file("routes_test.jsonl")):
        first[json.dumps({"message": rec["text"], "history": []})] = {"message": rec["text"], "history": []}
    for _, rec in read_jsonl(demo_file("rewrites.jsonl")):
        follow[json.dumps(rec["message"]) + json.dumps(rec["history"])] = {"message": rec["message"], "history": rec["history"]}
    turns = [rec["message"] for _, rec in read_jsonl(demo_file("conversation.jsonl"))]
    for i in range(1, len(turns)):
        follow[f"conversation {i}"] = {"message": turns[i], "history": turns[:i]}
    return {"first": list(first.values()), "follow_up": list(follow.values())}


def _labels() -> dict[str, str]:
    """message -> its route in the demo's labelled sets (what the fake LLM answers for the route)."""
    from querywise.demo import demo_file
    from querywise.files import read_jsonl

    out = {rec["text"]: rec["label"] for _, rec in read_jsonl(demo_file("routes_test.jsonl"))}
    out.update({rec["message"]: rec["route"] for _, rec in read_jsonl(demo_file("eval_cases.jsonl")) if rec.get("route")})
    return out


# --- the fake LLM provider's process ---------------------------------------------------------------


def _fake_main(urls: Any, stop: Any, report: Any, ttft_s: float, tokens_per_s: float) -> None:
    import querywise.llm.fake_server as fake_server
    from querywise.demo import demo_file
    from querywise.files import read_jsonl

    late: list[float] = []

    def wait(seconds: float) -> None:
        """The fake's wait, spinning only its last millisecond: its own 20 ms spin per call would
        burn a core at this request rate on 2 cores (the server's). How late it woke is recorded."""
        deadline = time.perf_counter() + seconds
        if seconds > 0.001:
            time.sleep(seconds - 0.001)
        while time.perf_counter() < deadline:
            time.sleep(0)
        late.append(time.perf_counter() - deadline)

    fake_server._wait_precisely = wait  # the module's private helper; bench-only
    standalones = {rec["message"]: rec["standalone"] for _, rec in read_jsonl(demo_file("rewrites.jsonl"))}
    labels = _labels()

    def respond(api: str, body: dict[str, Any]) -> Any:
        fmt = body["response_format"]["json_schema"]
        message = str(body["messages"][-1]["content"]).split("Message: ", 1)[-1].split("\n\n", 1)[0]
        if fmt["name"] != "plan":
            return fake_server.Reply(output={}, input_tokens=ONE_CALL[0], output_tokens=ONE_CALL[1])
        route_schema = json.dumps(fmt["schema"].get("properties", {}).get("route", {}))
        route = labels.get(message, "kb_search") if "enum" in route_schema else None
        if route is not None and f'"{route}"' not in route_schema:
            route = "kb_search"
        return fake_server.Reply(output={"standalone": standalones.get(message), "route": route}, input_tokens=ONE_CALL[0], output_tokens=ONE_CALL[1])

    with fake_server.FakeLLMServer(ttft_s=ttft_s, tokens_per_s=tokens_per_s) as fake:
        fake.respond_with(respond)
        urls.put(fake.url)
        stop.wait()
        report.put({"requests": len(fake.requests), "late_ms": [round(x * 1000, 3) for x in late]})


@contextlib.contextmanager
def _fake_provider(ttft_s: float, tokens_per_s: float) -> Iterator[tuple[str, Any]]:
    ctx = mp.get_context("spawn")
    urls, stop, report = ctx.Queue(), ctx.Event(), ctx.Queue()
    process = ctx.Process(target=_fake_main, args=(urls, stop, report, ttft_s, tokens_per_s), daemon=True)
    process.start()
    try:
        yield urls.get(timeout=60), report
    finally:
        stop.set()
        process.join(timeout=15)
        if process.is_alive():
            process.terminate()


def _llm_config(fake_url: str) -> Path:
    """The demo's querywise.toml with its paths made absolute, `[understanding]` adding the LLM moves
    and `[llm]` the OpenAI-compatible provider at the fake."""
    from querywise.config import load_settings
    from querywise.demo import demo_file

    text = demo_file("querywise.toml").read_text(encoding="utf-8")
    for key, file in (("catalog", "catalog.jsonl"), ("examples_file", "routes.jsonl")):
        old = f'{key} = "{file}"'
        if old not in text:
            raise RuntimeError(f"the demo config has no {old!r}")
        text = text.replace(old, f"{key} = {json.dumps(str(demo_file(file)))}")
    moves = [*load_settings(demo_file("querywise.toml")).understanding.moves, "llm_rewrite", "llm_route"]
    text += ("\n# bench/service/load.py: the LLM tier at the fake provider\n[understanding]\n"
             f"moves = {json.dumps(moves)}\n\n[llm]\nprovider = \"openai\"\nmodel = \"gpt-fake\"\nbase_url = {json.dumps(fake_url + '/v1')}\n"
             f"api_key_env = \"{KEY_ENV}\"\ndefault_price = {{ usd_per_m_in = 1.0, usd_per_m_out = 5.0 }}\n")  # fmt: skip
    path = HERE / "querywise-llm.toml"
    path.write_text(text, encoding="utf-8")
    load_settings(path)  # fails here, not in the workers
    return path
