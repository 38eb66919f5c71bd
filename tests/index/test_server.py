"""The Qdrant-server path, exercised with qdrant-client's local mode (a test double only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from querywise.conditions import parse_where
from querywise.config import IndexSettings, Settings
from querywise.corpus import Chunk
from querywise.index import Index, build_index
from querywise.index.server import connect


@pytest.fixture
def both(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings):  # type: ignore[no-untyped-def]
    client = connect(":memory:")
    server_settings = settings.model_copy(update={"index": IndexSettings(engine="server", collection="shop")})
    server = build_index(shop, tmp_path / "server-ix", settings=server_settings, embedder=hash_embedder, client=client)
    edge = build_index(shop, tmp_path / "edge-ix", settings=settings, embedder=hash_embedder)
    yield edge, server, client
    edge.close()


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_server_and_embedded_engines_agree(both, mode: str) -> None:  # type: ignore[no-untyped-def]
    edge, server, _ = both
    for query, where in [("Vela X3 Pro warranty", None), ("warranty cushions", parse_where(["price<200", "markets=eu"]))]:
        a = edge.search(query, mode=mode, k=6, where=where, exact=True)  # type: ignore[arg-type]
        b = server.search(query, mode=mode, k=6, where=where, exact=True)  # type: ignore[arg-type]
        # Equal scores may come back in either order; compare (score, id) pairs.
        assert sorted((-round(h.score, 3), h.id) for h in a) == sorted((-round(h.score, 3), h.id) for h in b)


def test_rebuild_moves_the_alias_and_keeps_the_previous_collection(tmp_path: Path, both, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    _, server, client = both
    old = {c.name for c in client.get_collections().collections}
    s = settings.model_copy(update={"index": IndexSettings(engine="server", collection="shop")})
    rebuilt = build_index(shop[:2], tmp_path / "server-ix", settings=s, embedder=hash_embedder, client=client)
    assert len(rebuilt) == 2 and rebuilt.engine.count() == 2
    now = {c.name for c in client.get_collections().collections}
    assert len(now) == 2 and old < now  # the previous build's collection stays (keep_builds = 2)
    (alias,) = client.get_aliases().aliases
    assert alias.alias_name == "shop" and alias.collection_name == f"shop-{rebuilt.manifest.build_id}"
    # An index opened before the rebuild still reads its own build, not the alias's.
    assert server.engine.count() == len(shop) and "cushions" in {h.id for h in server.search("replacement cushions", mode="bm25")}
    reopened = Index.open(tmp_path / "server-ix", settings=s, embedder=hash_embedder, client=client)
    assert {h.id for h in reopened.search("warranty", mode="bm25", k=10)} <= {shop[0].id, shop[1].id}
    # A third build drops the first build's collection with its folder.
    server.close()
    third = build_index(shop[:3], tmp_path / "server-ix", settings=s, embedder=hash_embedder, client=client)
    assert {c.name for c in client.get_collections().collections} == {
        f"shop-{rebuilt.manifest.build_id}", f"shop-{third.manifest.build_id}"
    }


def test_rollback_moves_the_alias_back(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    from querywise.index import rollback

    client = connect(":memory:")
    s = settings.model_copy(update={"index": IndexSettings(engine="server", collection="shop")})
    first = build_index(shop, tmp_path / "ix", settings=s, embedder=hash_embedder, client=client)
    build_index(shop[:2], tmp_path / "ix", settings=s, embedder=hash_embedder, client=client)
    assert rollback(tmp_path / "ix", client=client).build_id == first.manifest.build_id
    (alias,) = client.get_aliases().aliases
    assert alias.collection_name == f"shop-{first.manifest.build_id}"
    assert len(Index.open(tmp_path / "ix", settings=s, embedder=hash_embedder, client=client)) == len(shop)


def test_a_cluster_collection_is_created_with_the_configured_shards_and_replicas() -> None:
    """Against a recording stand-in for Qdrant's REST API on 127.0.0.1 (the collection create is
    the one call that carries them; local mode ignores both, and the filtered-search options)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from querywise.index.server import ServerEngine

    seen: list[tuple[str, str, dict[str, object]]] = []

    class Qdrant(BaseHTTPRequestHandler):
        def _answer(self, result: object) -> None:
            body = json.dumps({"result": result, "status": "ok", "time": 0.0}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_PUT(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            seen.append(("PUT", self.path, json.loads(self.rfile.read(length) or b"{}")))
            self._answer({"operation_id": 1, "status": "completed"} if "/index" in self.path else True)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            seen.append(("POST", self.path, json.loads(self.rfile.read(length) or b"{}")))
            self._answer([{"points": []}])

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Qdrant)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        from qdrant_client import QdrantClient

        client = QdrantClient(url=f"http://127.0.0.1:{server.server_address[1]}", check_compatibility=False)
        engine = ServerEngine.create(client, "shop", "b1", dim=8, hnsw_m=16, hnsw_ef_construct=64, shards=3, replicas=2,
                                     payload_graphs=False)
        engine.create_payload_index("category", "keyword", graph=True)
        engine.create_payload_index("price", "float", graph=False)
        from querywise.index.engine import EngineQuery

        engine.query(EngineQuery(mode="dense", limit=3, dense=[0.1] * 8, where=parse_where(["price<200"]), hnsw_ef=64, acorn=True))
        client.close()
    finally:
        server.shutdown()
        server.server_close()
    assert engine.collection == "shop-b1"
    ((method, path, body), category, price, (_, query_path, query)) = [s for s in seen if s[1].startswith("/collections/shop-b1")]
    # Graph links per payload field: Qdrant's enable_hnsw on each field's index.
    assert category[1].split("?")[0] == "/collections/shop-b1/index"
    assert category[2]["field_name"] == "category" and category[2]["field_schema"] == {"type": "keyword", "enable_hnsw": True}
    assert price[2]["field_name"] == "price" and price[2]["field_schema"] == {"type": "float", "enable_hnsw": False}
    assert (method, path.split("?")[0]) == ("PUT", "/collections/shop-b1")
    assert body["shard_number"] == 3 and body["replication_factor"] == 2
    # Without per-value graph links (`filtered_search` "acorn" or "exact"), filtered searches walk with ACORN.
    assert body["vectors"]["dense"]["hnsw_config"]["payload_m"] == 0  # type: ignore[index]
    assert query_path.split("?")[0] == "/collections/shop-b1/points/query/batch"
    (request,) = query["searches"]  # type: ignore[misc]
    assert request["params"]["acorn"]["enable"] is True and request["params"]["hnsw_ef"] == 64
