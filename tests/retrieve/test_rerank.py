"""The reranking step with a tiny cross-encoder built here from a random configuration (no download)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from querywise.config import RerankSettings, Settings
from querywise.index import Hit, Index
from querywise.plan import PlanQuery, QueryPlan
from querywise.retrieve import CrossEncoderReranker, Reordering, Reranker, open_reranker, rerank
from querywise.service import QueryWise

WORDS = ["vela", "x3", "pro", "headphones", "warranty", "month", "rain", "sweat", "pico", "buds", "play", "hours", "charge", "case", "replacement", "cushions", "part", "ship", "orders", "day"]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-ce")
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    torch.manual_seed(7)
    config = BertConfig(vocab_size=5 + len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                        max_position_embeddings=128, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(folder)
    return folder


def _hits(n: int) -> list[Hit]:
    texts = ["vela x3 warranty month", "pico buds play hours", "replacement cushions part", "orders ship day", "x3 pro rain sweat"]
    return [Hit(id=f"h{i}", score=1.0 / (i + 1), rank=i + 1, text=texts[i % len(texts)]) for i in range(n)]


@pytest.mark.torch
def test_the_top_n_are_put_in_the_models_order_and_the_rest_keep_theirs(tiny_cross_encoder: Path) -> None:
    reranker = CrossEncoderReranker(tiny_cross_encoder)
    hits = _hits(5)
    out, step = rerank(reranker, "x3 warranty", hits, top_n=3)
    assert step.move == "rerank" and step.status == "ran" and step.details["candidates"] == 3
    scores = reranker.scores("x3 warranty", [h.text for h in hits[:3]])
    assert [h.id for h in out[:3]] == [hits[i].id for i in sorted(range(3), key=lambda i: -scores[i])]
    assert [h.id for h in out[3:]] == ["h3", "h4"] and [h.rank for h in out] == [1, 2, 3, 4, 5]
    assert sorted(h.score for h in out[:3]) == sorted(scores)


def test_a_folder_that_is_not_a_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a model folder"):
        open_reranker(RerankSettings(kind="cross_encoder", model=tmp_path))
    with pytest.raises(ValueError, match="needs model"):
        RerankSettings(kind="cross_encoder")
    assert open_reranker(RerankSettings()) is None


@pytest.mark.torch
def test_the_plan_runs_with_a_rerank_step_in_its_trace(tiny_cross_encoder: Path, index: Index, tmp_path: Path) -> None:
    s = Settings(cache_dir=tmp_path / "c", rerank=RerankSettings(kind="cross_encoder", model=tiny_cross_encoder, top_n=4))
    plan = QueryPlan(message="vela x3 warranty", route="kb_search", queries=[PlanQuery(text="vela x3 warranty", kind="original")])
    with QueryWise(s, index) as qw:
        result = qw.execute(plan, k=3)
        plain = QueryWise(Settings(cache_dir=tmp_path / "c"), index).execute(plan, k=4)
    step = result.plan.step("rerank")
    assert step is not None and step.status == "ran" and step.details["top_n"] == 4 and step.details["candidates"] == 4
    assert step.details["model"] == f"cross-encoder {tiny_cross_encoder.name}" and step.latency_ms > 0
    assert len(result.hits) == 3 and {h.id for h in result.hits} <= {h.id for h in plain.hits}  # reordered among the fused top 4
    assert result.plan.trace[-1].move == "rerank"


def test_off_by_default(index: Index, tmp_path: Path) -> None:
    plan = QueryPlan(message="x3", route="kb_search", queries=[PlanQuery(text="x3", kind="original")])
    with QueryWise(Settings(cache_dir=tmp_path / "c"), index) as qw:
        assert qw.execute(plan).plan.step("rerank") is None




class Shortest:
    """A reranker of the user's own (a hosted API, a rule): the protocol is one method."""

    name = "shortest first"

    def reorder(self, message: str, candidates: Sequence[Hit], *, route: str | None = None) -> Reordering:
        return Reordering([-float(len(h.text)) for h in candidates])


def test_a_reranker_of_ones_own_is_given_to_the_deployment(index: Index, tmp_path: Path) -> None:
    assert isinstance(Shortest(), Reranker)
    plan = QueryPlan(message="vela x3 warranty", route="kb_search", queries=[PlanQuery(text="vela x3 warranty", kind="original")])
    with QueryWise(Settings(cache_dir=tmp_path / "c"), index, reranker=Shortest()) as qw:
        result = qw.execute(plan, k=5)
        arm = qw.with_moves([])
        assert arm.reranker is qw.reranker  # an evaluation arm reranks like the deployment
        arm.close()
    lengths = [len(h.text) for h in result.hits]
    assert lengths == sorted(lengths) and result.plan.step("rerank").details["model"] == "shortest first"  # type: ignore[union-attr]
