"""Shared by the route-classifier tests (test_classifiers, test_calibration): synthetic clusters
and three routes of our own, embedded with the packaged model (once per session)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest


def make_clusters(seed: int, n_per: int, noise: float, n_oos: int, dim: int = 16) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three overlapping routes around fixed directions plus out-of-scope points elsewhere."""
    centres = np.eye(dim)[:3] + 0.35 * np.eye(dim)[[1, 2, 0]]  # neighbours overlap
    rng = np.random.default_rng(seed)
    X = [centres[i] + noise * rng.standard_normal((n_per, dim)) for i in range(3)]
    oos_dirs = np.eye(dim)[3:6].sum(0) / math.sqrt(3) + np.eye(dim)[:3].sum(0) * 0.15
    X.append(oos_dirs + noise * rng.standard_normal((n_oos, dim)))
    y = np.array(["a"] * n_per + ["b"] * n_per + ["c"] * n_per + ["oos"] * n_oos)
    return np.vstack(X), y, centres


@pytest.fixture(scope="session")
def clusters() -> Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The :func:`make_clusters` generator: ``clusters(seed=, n_per=, noise=, n_oos=)``."""
    return make_clusters


# ------------------------------------------------------------------------------------------------
# Real embeddings: three routes of our own
# ------------------------------------------------------------------------------------------------

ROUTES = {
    "order_status": [
        "Where is my parcel right now?",
        "My package still hasn't arrived, can you track it?",
        "When will my order be delivered?",
        "The tracking page hasn't updated in four days.",
        "Has my order shipped yet?",
        "I need the tracking number for my delivery.",
        "The courier says delivered but nothing is at my door.",
        "How long until my shipment gets here?",
        "Is my order stuck in customs?",
        "Can you tell me the delivery status of order 5521?",
        "My box was supposed to come yesterday, where is it?",
        "Which carrier is bringing my package?",
    ],
    "refund": [
        "I want my money back for these headphones.",
        "How do I get a refund for a broken item?",
        "You charged me twice, please reverse one payment.",
        "When will the refund reach my card?",
        "I returned the jacket two weeks ago and still have no refund.",
        "Can I cancel my order and be reimbursed?",
        "The product was faulty, I'd like a full refund.",
        "Please credit my account for the missing item.",
        "How long do refunds take to process?",
        "I was overcharged and want the difference back.",
        "Refund the shipping fee, the parcel came late.",
        "Can I get reimbursed for the damaged blender?",
    ],
    "password_reset": [
        "I forgot my password and can't log in.",
        "The reset link in the email doesn't work.",
        "How do I change my account password?",
        "My account is locked after too many login attempts.",
        "I never received the password reset email.",
        "Can't sign in, it says my password is wrong.",
        "Help me recover access to my account.",
        "The two-factor code won't let me log in.",
        "I want to set a new password.",
        "My login keeps failing even with the right password.",
        "How can I unlock my profile?",
        "Reset my password please.",
    ],
}
OUT_OF_SCOPE = [
    "What's the weather going to be like in Lisbon tomorrow?",
    "Give me a recipe for banana bread.",
    "Who won the football match last night?",
    "Tell me a joke about penguins.",
    "What is the capital of Australia?",
    "How many moons does Jupiter have?",
]
N_TRAIN = 8  # per route; the other 4 are held out


@pytest.fixture(scope="session")
def embedded() -> dict[str, np.ndarray]:
    from querywise.embed import load_embedder

    embedder = load_embedder("onnx", cache_dir=None)
    train = [(t, r) for r, texts in ROUTES.items() for t in texts[:N_TRAIN]]
    held = [(t, r) for r, texts in ROUTES.items() for t in texts[N_TRAIN:]]
    return {
        "X_train": embedder.embed([t for t, _ in train]),
        "y_train": np.array([r for _, r in train]),
        "X_held": embedder.embed([t for t, _ in held]),
        "y_held": np.array([r for _, r in held]),
        "X_oos": embedder.embed(OUT_OF_SCOPE),
    }
