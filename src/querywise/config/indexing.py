"""`[embedding]`, `[chunking]` and `[index]`: how a corpus becomes an index."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from querywise.config._section import _Section, check_pattern

# The embedder kinds of `querywise.embed` (its EMBEDDER_KINDS; a test keeps the two in step), and
# "auto", which picks the fastest path that keeps the reference numbers. Validated here, so a bad
# value is a config error naming the key, not a failure when the first text is embedded.
EMBEDDING_KINDS: tuple[str, ...] = ("auto", "torch", "onnx", "onnx-int8")


class EmbeddingSettings(_Section):
    # "auto" is ONNX Runtime fp32 (the reference figures); "torch" (PyTorch: pip install
    # "querywise[torch]") and "onnx" are fp32 too;
    # "onnx-int8" is the fp32 weights quantized to int8 per channel, made locally and cached beside
    # the fp32 export, each text embedded alone (its vector does not depend on what it is embedded
    # with): faster, and close to fp32 (bench/results/int8.md has what it costs). Its model id names
    # its recipe (`all-MiniLM-L6-v2/onnx-int8-<key>`, `embed.int8_key`: the weights, the fp32
    # export, the quantization, ONNX Runtime's version), so a change of any of them makes new
    # cached vectors and refuses an index built before it.
    kind: str = "auto"  # An index is searched only with the precision that built it (fp32 or int8)
    batch_size: int = Field(64, ge=1)  # texts embedded per forward pass (fp32; "onnx-int8" embeds each text alone)
    cache: bool = True  # on-disk cache keyed by model and text hash

    @model_validator(mode="after")
    def _known_kind(self) -> EmbeddingSettings:
        if self.kind not in EMBEDDING_KINDS:
            raise ValueError(f"embedding.kind: unknown embedder kind {self.kind!r}; expected one of {', '.join(EMBEDDING_KINDS)}")
        return self


class ChunkingSettings(_Section):
    max_chars: int = Field(1000, ge=50)  # a record longer than this is cut into chunks of at most this many characters
    overlap: int = Field(0, ge=0)  # characters a chunk repeats from the one before it
    identifier_pattern: str = r"\b[A-Z]{2,}-\d{3,}\b"  # a chunk holding a match keeps it whole: an identifier is never cut in two

    @model_validator(mode="after")
    def _pattern_compiles(self) -> ChunkingSettings:
        check_pattern(self.identifier_pattern, "chunking.identifier_pattern")
        return self


class IndexSettings(_Section):
    engine: Literal["edge", "server"] = "edge"  # "edge": Qdrant embedded in the process (qdrant-edge-py); "server": a Qdrant server or cluster at server_url
    server_url: str | None = None  # for engine = "server"; the API key comes from QDRANT_API_KEY
    collection: str = "querywise"  # the Qdrant collection name prefix (engine = "server": one collection per build)
    # engine = "server" on a Qdrant cluster: each build's collection in this many shards, each
    # kept on this many nodes (Qdrant's shard_number / replication_factor; None: the server's
    # default). docs/scaling.md says how to size them.
    shards: int | None = Field(None, ge=1, le=1024)
    replicas: int | None = Field(None, ge=1, le=64)
    # BM25 (Lucene form) over Qdrant sparse vectors with the IDF modifier.
    k1: float = Field(1.5, gt=0)
    b: float = Field(0.75, ge=0, le=1)
    # HNSW: see bench/results for the recall@10 against exact search these settings keep.
    hnsw_m: int = Field(16, ge=4)
    hnsw_ef_construct: int = Field(64, ge=8)
    hnsw_ef: int = Field(128, ge=8)
    # A filter that keeps few points makes the graph search work harder for the same recall
    # (bench/results/scale.json, 400k chunks, 5% kept: recall@10 0.947 at ef 128, 0.972 at 256,
    # 0.987 at 512, p95 6.2 ms).
    hnsw_ef_filtered: int = Field(512, ge=8)
    # How a filtered dense search finds its nearest points. "graph": Qdrant's filterable HNSW,
    # extra graph links per indexed payload value built with the index (the slow part of a large
    # build). "acorn": no such links; the search walks the plain graph with ACORN, looking two
    # hops past points the filter drops. "exact": no such links; the points the filter keeps are
    # read through the payload index and all scored (recall 1, cost grows with the matches).
    # A filter Qdrant estimates to keep few points is scored exactly in every mode. An index
    # built with "acorn" or "exact" searched under "graph" uses ACORN (it has no links to walk).
    # Chosen by bench/retrieval/scale.py at 400k chunks: "graph" is the one mode that keeps recall@10 (0.994
    # unfiltered at ef 128, 0.987 filtered at 512); without the links the build takes half the
    # time (228 s against 453 s) but the plain graph is weaker (0.94 at ef 128, 0.986 at 512) and
    # ACORN reaches 0.94 filtered at ef 1024; "exact" gives 1.0 at p95 12 ms for 20,000 matches.
    filtered_search: Literal["graph", "acorn", "exact"] = "graph"
    # Under "graph", the indexed payload fields whose values get those links: each field costs
    # about one more graph build (400k chunks: 453 s with links on 3 fields, 258 s on the one the
    # filter is selective on, recall@10 0.983 and 0.9845 filtered; docs/scaling.md). None: the fields the deployment
    # filters on ([filters] fields and catalog_link, [access] fields), or every indexed field when
    # it names none. A filtered search none of whose conditions is on a linked field walks with ACORN.
    graph_fields: list[str] | None = None
    # An embedded (edge) build of more chunks than this makes segments of this many: each
    # segment's graph is built as soon as it is full and its build memory released, so a build's
    # peak memory is one segment's, not the corpus'; a search visits every segment (400k chunks:
    # peak RSS 2.13 GiB against 5.9 in one segment, recall@10 0.996 against 0.983 at ef 128;
    # docs/scaling.md). 0: one segment.
    segment_chunks: int = Field(100_000, ge=0)
    # Processes that analyse the corpus' text in a build (0: one per core; small corpora use one).
    build_workers: int = Field(0, ge=0)
    rrf_k: int = Field(60, ge=1)  # ranks counted from 1, as in Cormack et al.
    # How hybrid fuses its dense and BM25 lists: "rrf" (dense weighted 2 * dense_weight, BM25
    # 2 * (1 - dense_weight); 0.5 is plain RRF, the default when no labels exist) or "convex"
    # (dense_weight * normalised dense score + (1 - dense_weight) * normalised BM25 score).
    # `querywise tune` chooses both on labelled queries.
    fusion: Literal["rrf", "convex"] = "rrf"
    dense_weight: float = Field(0.5, ge=0.0, le=1.0)
    # Each chunk's sentences (its title and each sentence of its text) embedded too, as one Qdrant
    # multivector scored by its best sentence (MaxSim): a question that matches one sentence of a
    # long passage ranks it by that sentence, not by the passage's average. Hybrid then fuses a
    # third list, which takes `sentence_share` of the dense side's weight (dense_weight): the
    # chunk vector keeps dense_weight * (1 - sentence_share). It embeds about as many texts again
    # as the corpus has sentences (SciFact: 9.7 a chunk), so it is off unless asked for;
    # `querywise tune` chooses the share. bench/results/peers.md has what it buys on SciFact.
    sentence_vectors: bool = False
    sentence_share: float = Field(0.5, ge=0.0, le=1.0)
    depth: int = Field(100, ge=1)  # how deep each list goes into hybrid fusion
    # Pseudo-relevance feedback for BM25 (hybrid and bm25 searches): the `feedback_terms` terms that
    # weigh most in the search's first `feedback_docs` hits (hybrid: the fused ones) are added to
    # the BM25 query at `feedback_weight` (the best added term's weight; a query term weighs 1), and
    # the search runs again: one more search of `feedback_docs` hits. 0: off. It can help topical
    # queries whose first hits are right (Medline +0.013 nDCG@10, 30 queries, SE 0.011) and hurts
    # where they often are not (SciFact's claims and doc2dial's questions -0.024 on test): run
    # `querywise tune --feedback`, which writes it only when it held out above the fusion without
    # it (it wrote none on SciFact's train or doc2dial's dev queries; bench/results/feedback.md).
    feedback_docs: int = Field(0, ge=0, le=100)
    feedback_terms: int = Field(10, ge=1, le=100)
    feedback_weight: float = Field(0.5, gt=0.0, le=10.0)
    # Payload fields to index for fast filtering; None = every short scalar field.
    payload_indexes: list[str] | None = None
    # Builds kept in the index folder, the live one included: the previous one stays for readers
    # that opened it and for `querywise index --rollback` (a build a reader holds is never removed).
    keep_builds: int = Field(2, ge=1)
    # A live update (`querywise index --update`, `Index.upsert`) weighs the chunks it adds by the
    # build's average BM25 length; once the corpus' average has moved by more than this share of
    # it, the update weighs every chunk again, as a rebuild would (0: always exact).
    update_avgdl_drift: float = Field(0.01, ge=0.0)
