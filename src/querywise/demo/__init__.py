"""The bundled demo: Tessel, a fictional audio and wearables shop (see README.md here).

Written for this project. Its files are package data, so the demo runs from an installed
wheel as well as from a checkout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from querywise.catalog import Catalog
from querywise.corpus import Chunk, load_corpus
from querywise.files import read_jsonl

__all__ = ["DEMO_DIR", "SAMPLE_SEARCHES", "demo_conversation", "demo_corpus", "demo_file"]

DEMO_DIR = Path(__file__).parent

# What `querywise demo` searches to show the three modes side by side, and one filter.
SAMPLE_SEARCHES: list[tuple[str, list[str]]] = [
    ("How long is the warranty on the Halden Solace 7 Pro?", []),
    ("my earbuds got wet, am I covered?", []),
    ("replacement ear cushions HC-3471", []),
    ("how do I wipe my watch", []),
    ("warranty", ["family=headphones", "markets=eu"]),
]


def demo_file(name: str) -> Path:
    """Path of a bundled demo file, e.g. `demo_file("helpcentre.jsonl")`."""
    path = DEMO_DIR / name
    if not path.exists():
        raise FileNotFoundError(f"no demo file {name!r} in {DEMO_DIR}")
    return path


def demo_corpus() -> list[Chunk]:
    """The help-centre chunks plus one product page per catalog entry.

    Product pages carry the catalog fields (category, brand, price_usd, released, markets), so
    a filter such as "headphones under $200" finds products, as a shop's search would, while
    help articles answer the how-to and policy questions.
    """
    pages = [
        Chunk(
            id=f"product:{e.id}",
            text=f"{e.name}. {e.description}",
            title=e.name,
            # A product page is about its product: the catalog link (`[filters] catalog_link`) names it.
            payload={**e.fields, "part_numbers": list(e.part_numbers), "family": "product", "products": [e.name]},
        )
        for e in Catalog.load(demo_file("catalog.jsonl")).entities
    ]
    return load_corpus(demo_file("helpcentre.jsonl")) + pages


def demo_conversation() -> list[dict[str, Any]]:
    """The scripted demo conversation: `{"turn", "message", "demonstrates", "expected"}` per user
    turn (`expected`: the chunk ids that must rank in the top 3)."""
    return [rec for _, rec in read_jsonl(demo_file("conversation.jsonl"))]
