"""Offline calibration: choosing the thresholds of the route decision on labelled validation data.

:func:`choose_thresholds` picks the two thresholds of :func:`~querywise.understand.decision.decide`
(``min_margin`` and ``min_in_scope``, see :class:`~querywise.understand.decision.Thresholds`) for
one fitted classifier on labelled validation data -- they are never guessed. It runs before
deployment (``querywise router-eval``, ``bench/router_clinc150.py``), never per message.

Everything here is numpy in, numpy out: no I/O and no embedding calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from querywise.understand.decision import Matrix, RouteClassifier, Thresholds

__all__ = ["choose_thresholds"]


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
    """Pick ``(min_margin, min_in_scope)`` on labelled validation data (never on test data).

    Each validation message gets the outcome :func:`decide` would give it. With ``n_in``
    in-scope and ``n_oos`` out-of-scope messages (label ``oos_label``):

    * in_scope_accuracy = correctly routed / n_in (deferred or rejected messages count as wrong);
    * answered_accuracy = correctly routed / in-scope messages not deferred;
    * oos_recall = out-of-scope messages decided "oos" / n_oos (a deferred one is missed);
    * deferred_share = messages decided "unsure" / all messages.

    **Objective**: maximise ``(1 - oos_weight) * in_scope_accuracy + oos_weight * oos_recall``
    (just in_scope_accuracy when the data has no out-of-scope messages) **subject to**
    ``deferred_share <= max_deferred`` and ``answered_accuracy >= min_answered_accuracy``.
    Deferring never raises in_scope_accuracy, so the margin gate only rises as far as the
    answered-accuracy floor needs; the in-scope gate trades in-scope accuracy for oos recall.
    Ties go to fewer deferrals, then to the lower gates.

    If no pair meets the floor (or the floor is None), the deferral budget is spent instead: for
    each in-scope gate the margin gate goes as high as ``max_deferred`` allows (the least
    confident messages go to the next tier rather than being guessed), and the pair with the
    best objective wins. The deferral budget is never exceeded.

    Candidates are ``n_candidates`` quantiles of each signal on the validation data, plus "gate
    off" (0 margin, -inf in-scope). Only ``X_val``/``y_val`` are looked at.
    """
    if not 0.0 <= max_deferred <= 1.0:
        raise ValueError(f"max_deferred must be in [0, 1], got {max_deferred}")
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
    margin_cands = np.unique(np.concatenate([[0.0], np.quantile(finite_m, levels) if finite_m.size else []]))
    scope_cands = np.unique(np.concatenate([[-np.inf], np.quantile(s, levels)]))

    best: tuple[tuple[float, ...], Thresholds] | None = None  # meets the floor
    spend: tuple[tuple[float, ...], Thresholds] | None = None  # fallback: whole budget on the margin
    for t_s in scope_cands:
        rejected = (s < t_s) | top_is_oos
        kept = ~rejected
        recall = float((rejected & is_oos).sum()) / n_oos if n_oos else 0.0
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
        objective = in_acc if n_oos == 0 else (1 - oos_weight) * in_acc + oos_weight * recall
        # margin_cands ascend, so the pairs within budget are a prefix (t_m = 0 defers nothing).
        within = np.flatnonzero(deferred <= max_deferred + 1e-12)
        if min_answered_accuracy is not None:
            for j in within[answered_acc[within] >= min_answered_accuracy - 1e-12]:
                key = (float(objective[j]), -float(deferred[j]), -float(t_s), -float(margin_cands[j]))
                if best is None or key > best[0]:
                    best = (key, Thresholds(min_margin=float(margin_cands[j]), min_in_scope=float(t_s)))
        j = int(within[-1])
        spend_key = (float(objective[j]), -float(t_s))
        if spend is None or spend_key > spend[0]:
            spend = (spend_key, Thresholds(min_margin=float(margin_cands[j]), min_in_scope=float(t_s)))
    chosen = best if best is not None else spend
    assert chosen is not None
    return chosen[1]
