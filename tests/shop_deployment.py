"""The shop's deployment settings, shared by the tests that run it against another retriever."""

from __future__ import annotations

from pathlib import Path

from querywise.config import AccessSettings, RouteSpec, RoutingSettings, Settings, UnderstandingSettings


def shop_settings(tmp: Path) -> Settings:
    """A deployment of the shop: one search route, the session's market as access, the deterministic moves."""
    return Settings(
        cache_dir=tmp / "c",
        routing=RoutingSettings(routes=[RouteSpec(name="kb_search", search=True, examples=["what is the warranty", "how long does shipping take"])], min_margin=0.0),
        access=AccessSettings(fields={"market": "markets"}),
        understanding=UnderstandingSettings(moves=["follow_up", "filters", "spelling", "ambiguity"], part_numbers=[r"QR-?\d{4}"]),  # its cushions
    )
