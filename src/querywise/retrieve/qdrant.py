"""A Qdrant collection querywise did not build, as the retriever (qdrant-client).

The user names the collection, its dense vector (None: the collection's unnamed vector) and the
payload fields that hold the text, the title and the stable id (None: the point id). Queries are
embedded by the deployment's embedder, which must be the model the collection was built with (the
dimension is checked when the retriever opens). The plan's filters and the session's access are
translated into the collection's own filter (`index.server.qdrant_filter`, the one translation
the querywise server engine uses), so they run inside Qdrant: payload field names are the
collection's (`[access] fields` and `[filters]` name them).

Dense only: a sparse vector built by another tokeniser cannot be queried with ours, so `bm25` and
`hybrid` run dense here, and the retriever's name says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from querywise.conditions import Where
from querywise.config import RetrieverSettings
from querywise.embed import Embedder
from querywise.index import Hit
from querywise.index.engine import Mode
from querywise.index.server import connect, qdrant_filter
from querywise.retrieve.protocol import RetrieverError

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = ["QdrantRetriever"]


class QdrantRetriever:
    filters_inside = True

    def __init__(self, settings: RetrieverSettings, embedder: Embedder, *, client: QdrantClient | None = None) -> None:
        q = settings.qdrant
        if not q.collection:
            raise ValueError("[retriever] kind = 'qdrant' needs [retriever.qdrant] collection")
        self.settings, self.embedder, self.collection = settings, embedder, q.collection
        self.client = client if client is not None else connect(q.url)
        self.name = f"Qdrant collection {q.collection!r} at {q.url} (dense)"
        try:
            info = self.client.get_collection(q.collection)
        except Exception as exc:  # the client raises per transport (HTTP, gRPC, local): one clear message
            raise RetrieverError(f"{self.name}: cannot read the collection: {exc}") from exc
        vectors = info.config.params.vectors
        params = vectors.get(q.vector) if isinstance(vectors, dict) and q.vector is not None else vectors
        if params is None or isinstance(params, dict):
            names = sorted(vectors) if isinstance(vectors, dict) else []
            raise ValueError(f"{self.name} has no vector {q.vector!r}; its vectors: {names} (set [retriever.qdrant] vector)")
        if int(params.size) != embedder.dim:
            raise ValueError(f"{self.name}: its vector {q.vector or '(unnamed)'} has {params.size} dimensions, the embedder "
                             f"{embedder.model_id} gives {embedder.dim}: embed queries with the collection's own model ([embedding])")

    def retrieve(self, text: str, *, k: int, where: Where | None = None, mode: Mode = "hybrid") -> list[Hit]:
        q = self.settings.qdrant
        vector = [float(x) for x in self.embedder.embed([text])[0]]
        try:
            answer = self.client.query_points(self.collection, query=vector, using=q.vector, query_filter=qdrant_filter(where),
                                              limit=k, with_payload=True)
        except Exception as exc:
            raise RetrieverError(f"{self.name}: {type(exc).__name__}: {exc}") from exc
        hits = []
        for rank, point in enumerate(answer.points, start=1):
            payload: dict[str, Any] = dict(point.payload or {})
            ident = payload.get(q.id_field) if q.id_field else point.id
            hits.append(Hit(id=str(ident if ident is not None else point.id), score=float(point.score), rank=rank,
                            text=str(payload.get(q.text_field) or ""), title=str(payload.get(q.title_field) or "") if q.title_field else "",
                            payload=payload))
        return hits

    def close(self) -> None:
        self.client.close()
