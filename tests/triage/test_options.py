"""The options of a triage: the depths' rule is checked once, when the value is made."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from querywise.triage import TriageOptions
from querywise.triage.options import options_problem


def test_defaults_are_the_command_lines() -> None:
    o = TriageOptions()
    assert (o.k, o.context_k, o.mode, o.sample, o.seed, o.fpc) == (None, None, "hybrid", None, 0, False)  # by the rule


@pytest.mark.parametrize(("given", "problem"), [
    ({"k": 20, "context_k": 20}, "--context-k (20) must be below --k (20): ranking is the gold at ranks 21..k"),
    ({"k": 10, "context_k": 30}, "--context-k (30) must be below --k (10)"),
    ({"context_k": 0}, "context_k: Input should be greater than or equal to 1"),
    ({"k": 1}, "k: Input should be greater than or equal to 2"),
    ({"sample": 0}, "sample: Input should be greater than or equal to 1"),
    ({"mode": "fuzzy"}, "mode: Input should be 'dense', 'bm25' or 'hybrid'"),
    ({"depth": 5}, "depth: Extra inputs are not permitted"),
])
def test_invalid_options_are_refused_with_the_rule(given: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError) as exc:
        TriageOptions.model_validate(given)
    assert problem in options_problem(exc.value)


def test_options_are_frozen() -> None:
    o = TriageOptions(k=20, context_k=5)
    with pytest.raises(ValidationError):
        o.k = 3  # type: ignore[misc]
    assert o.model_copy(update={"seed": 7}).seed == 7 and hash(o) == hash(TriageOptions(k=20, context_k=5))


def test_depth_rule_follows_the_corpus_and_the_reranker() -> None:
    from querywise.triage.options import depth_rule

    assert depth_rule(386, 10)[0] == 20  # 5% is 19; never under 2 x context_k
    assert depth_rule(1033, 10)[0] == 50 and depth_rule(5183, 10)[0] == 50  # capped at 50
    k, why = depth_rule(5183, 10, rerank_top_n=30)
    assert k == 30 and "[rerank] top_n" in why


def test_resolve_keeps_what_was_given_and_states_the_rule() -> None:
    o = TriageOptions().resolve(n_chunks=386, file_context_k=5)
    assert (o.k, o.context_k) == (19, 5) and "failures file's rule" in o.k_rule
    given = TriageOptions(k=40, context_k=3).resolve(n_chunks=386, file_context_k=5)
    assert (given.k, given.context_k) == (40, 3) and "given" in given.k_rule
    with pytest.raises(ValueError, match="must be below k"):
        TriageOptions(k=5).resolve(n_chunks=386, file_context_k=10)
