"""Offline calibration: choosing the thresholds of the route decision on labelled validation data.

The user states an :class:`OperatingPoint` -- answered accuracy at least ``min_answered`` with at
most ``max_deferred`` of the messages deferred to the unsure tier -- and :func:`calibrate` picks
the two thresholds of :func:`~querywise.understand.routing.decision.decide` (``min_margin`` and
``min_in_scope``, see :class:`~querywise.understand.routing.decision.Thresholds`) for one fitted
classifier on labelled validation data to meet it, or says which part it could not meet.
:func:`choose_candidate` then picks among classifiers by their validation figures. Both run before
deployment (``querywise router-eval``, ``bench/routing/clinc150.py``: the same rule), never per
message.

Everything here is numpy in, numpy out: no I/O and no embedding calls.

>>> cal = calibrate(clf, X_val, y_val, OperatingPoint(min_answered=0.97, max_deferred=0.10))  # doctest: +SKIP
>>> cal.thresholds, cal.meets, cal.warning                                                   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from querywise.understand.routing.decision import Matrix, RouteClassifier, Thresholds

__all__ = ["Calibration", "OperatingPoint", "Tradeoff", "calibrate", "choose_candidate", "choose_thresholds"]

_EPS = 1e-12  # rates are ratios of counts: compare them with a tolerance, not bit for bit


@dataclass(frozen=True)
class OperatingPoint:
    """What a deployment asks of its router: answered accuracy at least ``min_answered`` (None:
    no floor) with at most ``max_deferred`` of all messages deferred to the unsure tier.

    ``headroom`` is added to the floor on validation data, because the thresholds then meet
    messages they were not chosen on: half a point by default (on CLINC150's 3,000 validation
    messages the standard error of a 97% accuracy is about 0.3 point). The deferral budget is a
    hard limit and gets no headroom.
    """

    min_answered: float | None = 0.97
    max_deferred: float = 0.10
    headroom: float = 0.005
    # The share of out-of-scope validation messages the in-scope gate must keep out, whatever else
    # is missed: without it, an infeasible point made the chooser drop the gate (0% OOS recall).
    # 0 (here) turns the floor off; a deployment states it in `[routing] min_oos_recall` (0.5 by
    # default), which `router-eval` passes. It applies only where val has out-of-scope messages.
    min_oos_recall: float = 0.0

    def __post_init__(self) -> None:
        if self.min_answered is not None and not 0.0 <= self.min_answered <= 1.0:
            raise ValueError(f"min_answered must be in [0, 1], got {self.min_answered}")
        if not 0.0 <= self.max_deferred <= 1.0:
            raise ValueError(f"max_deferred must be in [0, 1], got {self.max_deferred}")
        if self.headroom < 0:
            raise ValueError(f"headroom must be 0 or more, got {self.headroom}")
        if not 0.0 <= self.min_oos_recall <= 1.0:
            raise ValueError(f"min_oos_recall must be in [0, 1], got {self.min_oos_recall}")

    @property
    def val_floor(self) -> float | None:
        """The answered-accuracy floor on validation data: ``min_answered + headroom`` (at most 1)."""
        return None if self.min_answered is None else min(1.0, self.min_answered + self.headroom)

    def describe(self) -> str:
        """One line for people, e.g. 'answered accuracy >= 97.0% (97.5% on val), deferred <= 10.0%'."""
        oos = f", OOS recall >= {self.min_oos_recall:.0%}" if self.min_oos_recall else ""
        if self.val_floor is None:
            return f"deferred <= {self.max_deferred:.1%}{oos} (no answered-accuracy floor)"
        on_val = f" ({self.val_floor:.1%} on val)" if self.headroom else ""
        return f"answered accuracy >= {self.min_answered:.1%}{on_val}, deferred <= {self.max_deferred:.1%}{oos}"


@dataclass(frozen=True)
class Tradeoff:
    """One point near an operating point that cannot be met, and what it gives on val: what the
    user would trade (answered accuracy, deferral, OOS recall) to get it."""

    what: str
    thresholds: Thresholds
    answered_accuracy: float | None
    deferred_share: float
    oos_recall: float | None


@dataclass(frozen=True)
class Calibration:
    """The thresholds :func:`calibrate` chose and what they give on the validation data.

    ``answered_accuracy`` is None when nothing in scope is answered, ``oos_recall`` None when the
    validation data has no out-of-scope message. ``meets`` is True when both parts of the
    operating point hold on val; otherwise ``warning`` says which did not, and ``needed_deferred``
    is the smallest deferral at which the floor would have been met (None: at none).
    """

    thresholds: Thresholds
    point: OperatingPoint
    in_scope_accuracy: float
    answered_accuracy: float | None
    deferred_share: float
    oos_recall: float | None
    objective: float
    meets: bool
    needed_deferred: float | None
    warning: str | None
    oos_weight: float = 0.5
    tradeoffs: tuple[Tradeoff, ...] = ()  # when the point is not met: the nearest points that meet a part of it

    @property
    def objective_rule(self) -> str:
        """What ``objective`` is, in words."""
        if self.oos_recall is None:
            return "in-scope accuracy (val has no out-of-scope message)"
        return f"{1 - self.oos_weight:g} x in-scope accuracy + {self.oos_weight:g} x OOS recall"


def calibrate(
    clf: RouteClassifier,
    X_val: Matrix,
    y_val: Sequence[str],
    point: OperatingPoint | None = None,
    *,
    oos_label: str = "oos",
    oos_weight: float = 0.5,
    n_candidates: int = 201,
    min_margin: float | None = None,
) -> Calibration:
    """Pick ``(min_margin, min_in_scope)`` on labelled validation data (never on test data) to
    meet ``point`` (default: :class:`OperatingPoint` ()).

    Each validation message gets the outcome :func:`decide` would give it. With ``n_in``
    in-scope and ``n_oos`` out-of-scope messages (label ``oos_label``):

    * in_scope_accuracy = correctly routed / n_in (deferred or rejected messages count as wrong);
    * answered_accuracy = correctly routed / in-scope messages not deferred;
    * oos_recall = out-of-scope messages decided "oos" / n_oos (a deferred one is missed);
    * deferred_share = messages decided "unsure" / all messages.

    **Rule.** Among the pairs meeting the operating point on val -- ``deferred_share <=
    max_deferred`` and ``answered_accuracy >= point.val_floor`` -- the one with the best objective
    ``(1 - oos_weight) * in_scope_accuracy + oos_weight * oos_recall`` (in_scope_accuracy alone
    when val has no out-of-scope message); ties go to fewer deferrals, then to the lower gates.
    Deferring never raises in_scope_accuracy, so for each in-scope gate this is the lowest margin
    gate that meets the floor: the cheapest point in deferrals. The in-scope gate trades in-scope
    accuracy for oos recall.

    **When no pair meets both**, the pair closest to the point is kept: the deferral budget stays
    a hard limit, and within it the highest answered accuracy wins (then the objective) -- the
    least confident messages go to the next tier rather than being guessed, and no out-of-scope
    recall is bought with answered accuracy the user asked for. ``warning`` names the part missed
    and the deferral that meeting the floor would have needed. With a fixed ``min_margin`` only
    the in-scope gate is chosen; a margin that alone defers more than the budget is kept at the
    least deferral and reported the same way.

    Candidates are ``n_candidates`` quantiles of each signal on the validation data, plus "gate
    off" (0 margin, -inf in-scope). Only ``X_val``/``y_val`` are looked at.
    """
    point = point or OperatingPoint()
    if not 0.0 <= oos_weight <= 1.0:
        raise ValueError(f"oos_weight must be in [0, 1], got {oos_weight}")
    y = np.asarray([str(v) for v in y_val])
    S = np.asarray(clf.scores(X_val), dtype=np.float64)
    s = np.asarray(clf.in_scope(X_val), dtype=np.float64).reshape(-1)
    if not (len(y) == len(S) == len(s)) or len(y) == 0:
        raise ValueError(f"need as many labels as vectors, got {len(y)} labels for {len(S)} vectors")
    labels = np.asarray(clf.labels)
    order = np.argsort(-S, axis=1, kind="stable")
    top = labels[order[:, 0]]
    margin = S[np.arange(len(S)), order[:, 0]] - S[np.arange(len(S)), order[:, 1]] if S.shape[1] > 1 else np.full(len(S), np.inf)
    is_oos = y == oos_label
    top_is_oos = top == oos_label  # an explicit oos column, if a classifier exposes one
    correct = ~is_oos & (top == y)
    n, n_in, n_oos = len(y), int((~is_oos).sum()), int(is_oos.sum())
    if n_in == 0:
        raise ValueError("validation data has no in-scope messages")

    levels = np.linspace(0.0, 1.0, n_candidates)
    finite_m = margin[np.isfinite(margin)]
    if min_margin is not None:
        margin_cands = np.asarray([float(min_margin)])
    else:
        margin_cands = np.unique(np.concatenate([[0.0], np.quantile(finite_m, levels) if finite_m.size else []]))
    scope_cands = np.unique(np.concatenate([[-np.inf], np.quantile(s, levels)]))
    floor, budget = point.val_floor, point.max_deferred
    oos_floor = point.min_oos_recall if n_oos else 0.0

    Pick = tuple[tuple[float, ...], Thresholds, tuple[float, float, float, float | None, float, int]]
    best: Pick | None = None  # meets both
    closest: Pick | None = None  # fallback: the pair closest to the point
    needed: float | None = None  # the least deferral that meets the floor, at any in-scope gate
    cheapest: Pick | None = None  # the least deferral that meets the floor, keeping the OOS floor
    no_gate: Pick | None = None  # the highest answered accuracy within the budget, OOS floor ignored
    most_out: Pick | None = None  # the highest OOS recall within the budget (when no gate reaches the floor)
    for t_s in scope_cands:
        rejected = (s < t_s) | top_is_oos
        kept = ~rejected
        recall = float((rejected & is_oos).sum()) / n_oos if n_oos else None
        recall_ok = recall is None or recall >= oos_floor - _EPS
        # Among kept messages, one with margin < t_m is deferred: count with sorted margins.
        m_kept = margin[kept]
        srt = np.argsort(m_kept, kind="stable")
        m_sorted = m_kept[srt]
        cum_in = np.concatenate([[0], np.cumsum((~is_oos[kept])[srt])])
        cum_ok = np.concatenate([[0], np.cumsum(correct[kept][srt])])
        below = np.searchsorted(m_sorted, margin_cands, side="left")  # deferred, per t_m
        deferred = below / n
        routed_ok = cum_ok[-1] - cum_ok[below]
        answered = n_in - cum_in[below]
        answered_acc = np.divide(routed_ok, answered, out=np.zeros(len(below)), where=answered > 0)
        in_acc = routed_ok / n_in
        objective = in_acc if recall is None else (1 - oos_weight) * in_acc + oos_weight * recall

        def figures(j: int, answered: np.ndarray = answered, answered_acc: np.ndarray = answered_acc, in_acc: np.ndarray = in_acc,
                    deferred: np.ndarray = deferred, objective: np.ndarray = objective, recall: float | None = recall) -> tuple[float, float, float, float | None, float, int]:
            return float(in_acc[j]), float(answered_acc[j]), float(deferred[j]), recall, float(objective[j]), int(answered[j])

        floor_ok = answered_acc >= floor - _EPS if floor is not None else np.ones(len(below), bool)
        if floor is not None and floor_ok.any():
            lowest = float(deferred[floor_ok].min())
            needed = lowest if needed is None else min(needed, lowest)
            if recall_ok:
                j = int(np.flatnonzero(floor_ok)[np.argmin(deferred[floor_ok])])
                cheap_key = (-float(deferred[j]), float(objective[j]))
                if cheapest is None or cheap_key > cheapest[0]:
                    cheapest = (cheap_key, Thresholds(min_margin=float(margin_cands[j]), min_in_scope=float(t_s)), figures(j))
        # margin_cands ascend, so the pairs within budget are a prefix (t_m = 0 defers nothing).
        within = np.flatnonzero(deferred <= budget + _EPS)
        if within.size:
            j = int(within[np.lexsort((objective[within], answered_acc[within]))[-1]])
            gate_key = (float(answered_acc[j]), float(objective[j]))
            if no_gate is None or gate_key > no_gate[0]:
                no_gate = (gate_key, Thresholds(min_margin=float(margin_cands[j]), min_in_scope=float(t_s)), figures(j))
            out_key = (recall or 0.0, float(answered_acc[j]), float(objective[j]))
            if most_out is None or out_key > most_out[0]:
                most_out = (out_key, Thresholds(min_margin=float(margin_cands[j]), min_in_scope=float(t_s)), figures(j))
        if not recall_ok:  # the OOS floor is kept like the deferral budget: a pair below it is never chosen
            continue
        for j in within[floor_ok[within]]:
            key = (float(objective[j]), -float(deferred[j]), -float(t_s), -float(margin_cands[j]))
            if best is None or key > best[0]:
                best = (key, Thresholds(min_margin=float(margin_cands[j]), min_in_scope=float(t_s)), figures(int(j)))
        # Closest to the point, for when no pair meets it: within the budget (a fixed margin gate
        # can exceed it: then the least deferral), the highest answered accuracy, then the objective.
        pool = within if within.size else np.asarray([int(np.argmin(deferred))])
        j = int(pool[np.lexsort((-deferred[pool], objective[pool], answered_acc[pool]))[-1]])
        near_key = (float(bool(within.size)), 0.0 if within.size else -float(deferred[j]), float(answered_acc[j]), float(objective[j]),
                    -float(deferred[j]), -float(t_s))
        if closest is None or near_key > closest[0]:
            closest = (near_key, Thresholds(min_margin=float(margin_cands[j]), min_in_scope=float(t_s)), figures(j))
    if closest is None:  # no in-scope gate keeps the OOS floor within the budget: the one that keeps the most out
        closest = most_out
    chosen = best if best is not None else closest
    if chosen is None:
        raise ValueError("no thresholds could be evaluated on the validation data")
    in_acc_c, answered_c, deferred_c, recall_c, objective_c, n_answered = chosen[2]
    warning = None
    tradeoffs: tuple[Tradeoff, ...] = ()
    if best is None:
        warning = _shortfall(point, chosen[1], answered_c if n_answered else None, deferred_c, needed, min_margin, recall_c)
        named = [("chosen: the highest answered accuracy within the deferral budget" + (f", OOS recall >= {oos_floor:.0%}" if oos_floor else ""), chosen),
                 ("the least deferral that meets the answered-accuracy floor" + (f" and OOS recall >= {oos_floor:.0%}" if oos_floor else ""), cheapest),
                 ("the highest answered accuracy within the deferral budget, no OOS floor", no_gate if oos_floor else None)]
        tradeoffs = tuple(Tradeoff(what=what, thresholds=p[1], answered_accuracy=p[2][1] if p[2][5] else None, deferred_share=p[2][2],
                                   oos_recall=p[2][3]) for what, p in named if p is not None)
    return Calibration(
        thresholds=chosen[1], point=point, in_scope_accuracy=in_acc_c, answered_accuracy=answered_c if n_answered else None,
        deferred_share=deferred_c, oos_recall=recall_c, objective=objective_c, meets=best is not None,
        needed_deferred=needed, warning=warning, oos_weight=oos_weight, tradeoffs=tradeoffs,
    )


def _shortfall(point: OperatingPoint, th: Thresholds, answered: float | None, deferred: float, needed: float | None, fixed_margin: float | None,
               recall: float | None = None) -> str:
    """Which part of the operating point the chosen thresholds miss on val, and by how much."""
    parts = []
    if recall is not None and recall < point.min_oos_recall - _EPS:
        parts.append(f"no in-scope gate keeps {point.min_oos_recall:.0%} of the out-of-scope messages out: the best keeps {recall:.1%}")
    if deferred > point.max_deferred + _EPS:
        parts.append(f"the fixed margin gate {th.min_margin:g} defers {deferred:.1%} of val, over the {point.max_deferred:.1%} budget")
    floor = point.val_floor
    if floor is not None and (answered is None or answered < floor - _EPS):
        got = "nothing in scope is answered" if answered is None else f"answered accuracy on val is {answered:.1%}"
        if fixed_margin is not None:
            need = (f"no in-scope gate reaches it with the margin gate fixed at {fixed_margin:g}" if needed is None
                    else f"reaching it needs {needed:.1%} deferred at that margin gate")
        else:
            need = "no threshold reaches it at any deferral" if needed is None else f"reaching it needs {needed:.1%} deferred"
        parts.append(f"{got} at {deferred:.1%} deferred, below the {floor:.1%} asked of val ({need})")
    head = "operating point not met on val"
    tail = "; kept: the highest answered accuracy within the deferral budget" if deferred <= point.max_deferred + _EPS else ""
    return f"{head}: " + "; ".join(parts) + tail


def choose_candidate(names: Sequence[str], candidates: Sequence[Calibration]) -> tuple[int, str]:
    """Which of several calibrated classifiers to keep, by validation figures only, and why.

    Among the candidates meeting the operating point on val, the best objective (what
    :func:`calibrate` maximises), ties to the earlier-listed one. When none meets it, the one whose
    val answered accuracy comes closest to the floor, then the best objective.
    """
    if not candidates or len(names) != len(candidates):
        raise ValueError("need one name per candidate, and at least one candidate")
    meets = [i for i, c in enumerate(candidates) if c.meets]

    def fig(c: Calibration) -> str:
        return (f"answered {_pct(c.answered_accuracy)}, deferred {c.deferred_share:.1%}, in-scope accuracy {c.in_scope_accuracy:.1%}, "
                f"OOS recall {_pct(c.oos_recall)}, objective {c.objective:.1%}")

    if meets:
        i = max(meets, key=lambda k: (candidates[k].objective, -k))
        others = [k for k in range(len(candidates)) if k != i]
        if not others:
            return i, f"{names[i]} meets the operating point on val ({fig(candidates[i])})"
        rivals = "; ".join(f"{names[k]} {'also meets it but has a lower objective' if candidates[k].meets else 'does not meet it'} ({fig(candidates[k])})" for k in others)
        return i, f"{names[i]} meets the operating point on val with the best objective, {candidates[i].objective_rule} ({fig(candidates[i])}); {rivals}"
    i = max(range(len(candidates)), key=lambda k: (candidates[k].answered_accuracy or 0.0, candidates[k].objective, -k))
    rest = "; ".join(f"{names[k]} ({fig(candidates[k])})" for k in range(len(candidates)) if k != i)
    return i, f"no classifier meets the operating point on val; {names[i]} comes closest ({fig(candidates[i])})" + (f"; {rest}" if rest else "")


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"


def choose_thresholds(
    clf: RouteClassifier,
    X_val: Matrix,
    y_val: Sequence[str],
    *,
    oos_label: str = "oos",
    max_deferred: float = 0.10,
    min_answered_accuracy: float | None = 0.97,
    oos_weight: float = 0.5,
    n_candidates: int = 201,
) -> Thresholds:
    """The thresholds of :func:`calibrate` for a floor given as it applies on val (no headroom)."""
    point = OperatingPoint(min_answered=min_answered_accuracy, max_deferred=max_deferred, headroom=0.0)
    return calibrate(clf, X_val, y_val, point, oos_label=oos_label, oos_weight=oos_weight, n_candidates=n_candidates).thresholds
