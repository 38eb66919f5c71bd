"""The drift guard read from a dense list: when it fires, and when it cannot say."""

from __future__ import annotations

import pytest

from querywise.index import Hit
from querywise.plan import DriftGuard
from querywise.retrieve import check_drift

GUARD = DriftGuard(against="how long does shipping take?", clarity=0.2, away=0.15)


def _own(best: float, fiftieth: float, n: int = 60, at: dict[str, float] | None = None) -> list[Hit]:
    """A dense list of `n` hits in cosine order from `best` down to `fiftieth` at rank 50."""
    step = (best - fiftieth) / 49
    scores = {f"c{i}": best - step * i for i in range(n)}
    scores.update(at or {})
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    return [Hit(id=cid, score=s, rank=r, text="") for r, (cid, s) in enumerate(ranked, start=1)]


def test_it_fires_when_the_message_is_clear_and_the_first_hit_far() -> None:
    check = check_drift("q", GUARD, "c30", _own(0.7, 0.4), retriever="ix")
    assert check.fired and check.checked
    assert check.clarity == pytest.approx(0.3, abs=1e-4) and check.drift == pytest.approx(0.3 / 49 * 30, abs=1e-4)


@pytest.mark.parametrize(("best", "fiftieth", "first"), [(0.7, 0.4, "c2"), (0.7, 0.55, "c40")])
def test_it_keeps_the_query_near_the_message_s_best_or_when_the_message_finds_nothing_clearly(best: float, fiftieth: float, first: str) -> None:
    check = check_drift("q", GUARD, first, _own(best, fiftieth), retriever="ix")
    assert check.checked and not check.fired and check.why.startswith("kept")


def test_a_first_hit_beyond_the_list_counts_as_the_list_s_last() -> None:
    own = _own(0.7, 0.4)
    check = check_drift("q", GUARD, "not-in-the-list", own, retriever="ix")
    assert check.drift == pytest.approx(own[0].score - own[-1].score, abs=1e-4) and check.fired


def test_it_cannot_say_without_cosines_a_long_list_or_a_hit() -> None:
    assert "no cosines" in check_drift("q", GUARD, "c1", None, retriever="an endpoint").why
    assert "under 50" in check_drift("q", GUARD, "c1", _own(0.7, 0.4, n=49), retriever="ix").why
    assert "found nothing" in check_drift("q", GUARD, None, _own(0.7, 0.4), retriever="ix").why
    for check in (check_drift("q", GUARD, "c1", None, retriever="x"), check_drift("q", GUARD, None, _own(0.7, 0.4), retriever="x")):
        assert not check.fired and not check.checked
