"""One settings object, passed down explicitly. Loaded from TOML by deployments (later
sections add routes, filters and thresholds); every field has an embedded default so the
demo and a first `querywise index` need no file at all."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from querywise.files import InputError, read_jsonl

__all__ = [
    "EMBEDDING_KINDS",
    "AccessSettings",
    "ChunkingSettings",
    "ConfigError",
    "DeploymentSettings",
    "ElasticsearchSource",
    "EmbeddingSettings",
    "FilterField",
    "FilterSettings",
    "IdentifierRule",
    "IndexSettings",
    "LLMMove",
    "LLMSettings",
    "LimitsSettings",
    "Move",
    "Price",
    "QdrantSource",
    "RerankSettings",
    "RetrieverFields",
    "RetrieverSettings",
    "RouteSpec",
    "RoutingSettings",
    "ServerSettings",
    "Settings",
    "UnderstandingSettings",
    "check_routes_declared",
    "default_cache_dir",
    "load_settings",
    "write_settings_file",
]


def default_cache_dir() -> Path:
    """`$QUERYWISE_CACHE_DIR`, else `$XDG_CACHE_HOME/querywise`, else `~/.cache/querywise`."""
    if env := os.environ.get("QUERYWISE_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "querywise"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update` applied, validated like settings read from a file: pydantic's own
        copy skips validators, so a changed section could otherwise name a route nobody declared."""
        copied = super().model_copy(update=update, deep=deep)
        return type(self).model_validate(copied.model_dump()) if update else copied


# The embedder kinds of `querywise.embed` (its EMBEDDER_KINDS; a test keeps the two in step), and
# "auto", which picks the fastest path that keeps the reference numbers. Validated here, so a bad
# value is a config error naming the key, not a failure when the first text is embedded.
EMBEDDING_KINDS: tuple[str, ...] = ("auto", "torch", "onnx", "onnx-int8")


class EmbeddingSettings(_Section):
    kind: str = "auto"  # one of EMBEDDING_KINDS
    batch_size: int = Field(64, ge=1)
    cache: bool = True  # on-disk cache keyed by model and text hash

    @model_validator(mode="after")
    def _known_kind(self) -> EmbeddingSettings:
        if self.kind not in EMBEDDING_KINDS:
            raise ValueError(f"embedding.kind: unknown embedder kind {self.kind!r}; expected one of {', '.join(EMBEDDING_KINDS)}")
        return self


class ChunkingSettings(_Section):
    max_chars: int = Field(1000, ge=50)
    overlap: int = Field(0, ge=0)
    identifier_pattern: str = r"\b[A-Z]{2,}-\d{3,}\b"

    @model_validator(mode="after")
    def _pattern_compiles(self) -> ChunkingSettings:
        try:
            re.compile(self.identifier_pattern, re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"chunking.identifier_pattern {self.identifier_pattern!r} does not compile: {exc}") from None
        return self


class IndexSettings(_Section):
    engine: Literal["edge", "server"] = "edge"
    server_url: str | None = None  # for engine = "server"; the API key comes from QDRANT_API_KEY
    collection: str = "querywise"
    # BM25 (Lucene form) over Qdrant sparse vectors with the IDF modifier.
    k1: float = Field(1.5, gt=0)
    b: float = Field(0.75, ge=0, le=1)
    # HNSW: see bench/results for the recall@10 against exact search these settings keep.
    hnsw_m: int = Field(16, ge=4)
    hnsw_ef_construct: int = Field(64, ge=8)
    hnsw_ef: int = Field(128, ge=8)
    # A filter that keeps few points makes the graph search work harder for the same recall
    # (bench: 400k chunks, 5% kept: recall@10 0.945 at ef 128, 0.973 at ef 256).
    hnsw_ef_filtered: int = Field(256, ge=8)
    rrf_k: int = Field(60, ge=1)  # ranks counted from 1, as in Cormack et al.
    # How hybrid fuses its dense and BM25 lists: "rrf" (dense weighted 2 * dense_weight, BM25
    # 2 * (1 - dense_weight); 0.5 is plain RRF, the default when no labels exist) or "convex"
    # (dense_weight * normalised dense score + (1 - dense_weight) * normalised BM25 score).
    # `querywise tune` chooses both on labelled queries.
    fusion: Literal["rrf", "convex"] = "rrf"
    dense_weight: float = Field(0.5, ge=0.0, le=1.0)
    depth: int = Field(100, ge=1)  # how deep each list goes into hybrid fusion
    # Payload fields to index for fast filtering; None = every short scalar field.
    payload_indexes: list[str] | None = None
    # Builds kept in the index folder, the live one included: the previous one stays for readers
    # that opened it and for `querywise index --rollback` (a build a reader holds is never removed).
    keep_builds: int = Field(2, ge=1)


class RouteSpec(_Section):
    name: str = Field(min_length=1)
    description: str = ""
    examples: list[str] = Field(default_factory=list)
    search: bool = False  # does this route run retrieval?


class IdentifierRule(_Section):
    """A message matching `pattern` (always case-insensitive) goes to `route`."""

    pattern: str
    route: str

    @model_validator(mode="after")
    def _compiles(self) -> IdentifierRule:
        try:
            re.compile(self.pattern, re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"pattern {self.pattern!r} does not compile: {exc}") from None
        return self


class RoutingSettings(_Section):
    routes: list[RouteSpec] = Field(default_factory=list)
    examples_file: Path | None = None  # JSONL {"text", "label"}, added to the inline examples
    rules: list[IdentifierRule] = Field(default_factory=list)
    classifier: Literal["centroid", "trained", "auto"] = "auto"
    # An encoder fine-tuned on the examples (`querywise router-train`); None = the index's embedder.
    encoder: Path | None = None
    min_margin: float = Field(0.05, ge=0)
    # Below this in-scope signal a message is out of scope. None: no such gate. Choose it on
    # labelled data (`querywise router-eval --val`), never by guessing.
    min_in_scope: float | None = None
    # The operating point `querywise router-eval` chooses min_margin and min_in_scope for on
    # validation data: answered accuracy at least min_answered (None: no floor) with at most
    # max_deferred of the messages deferred to the unsure tier. Read offline, never per message.
    min_answered: float | None = Field(0.97, ge=0, le=1)
    max_deferred: float = Field(0.10, ge=0, le=1)
    default_route: str | None = None  # applied when the classifier is unsure and no LLM tier is set
    out_of_scope_route: str | None = None
    high_stakes: list[str] = Field(default_factory=list)  # fail closed (ask) on error

    def route_references(self) -> list[tuple[str, str]]:
        """(config key, route name) for every setting here that names a route."""
        refs = [(f"routing.rules[{i}].route", r.route) for i, r in enumerate(self.rules)]
        refs += [(key, name) for key, name in (("routing.default_route", self.default_route), ("routing.out_of_scope_route", self.out_of_scope_route)) if name is not None]
        return refs + [(f"routing.high_stakes[{i}]", r) for i, r in enumerate(self.high_stakes)]

    @model_validator(mode="after")
    def _routes_declared(self) -> RoutingSettings:
        names = [r.name for r in self.routes]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise ValueError(f"routing.routes: route {doubled[0]!r} is declared more than once")
        if names or self.examples_file is None:  # else the examples file declares them: load_settings reads it
            check_routes_declared(set(names), self.route_references())
        return self


def check_routes_declared(declared: set[str], references: list[tuple[str, str]], *, source: str = "[[routing.routes]]") -> None:
    """Raise ValueError for the first reference to a route that is not declared.

    A deployment's routes are declared by `[[routing.routes]]`; when it lists none, by the
    labels of `routing.examples_file` (`source` then names it); with neither, no route exists
    and every message goes to the one implicit search route, so nothing may name a route.
    """
    for key, name in references:
        if name in declared:
            continue
        if declared:
            raise ValueError(f"{key}: unknown route {name!r} (routes declared by {source}: {', '.join(sorted(declared))})")
        raise ValueError(f"{key}: unknown route {name!r}: no route is declared (add [[routing.routes]] or a routing.examples_file)")


class FilterField(_Section):
    """One filterable field of the index payload, as the filter validator sees it."""

    type: Literal["number", "integer", "enum", "keyword", "list"]
    values: list[str] | None = None  # allowed values (enum); or taken from the catalog
    catalog_field: str | None = None  # catalog key whose values are this field's enum
    min: float | None = None
    max: float | None = None
    unit: str | None = None  # e.g. "usd": amounts in other units are converted
    aliases: list[str] = Field(default_factory=list)  # words users say for it ("price", "cost")
    # What a filter on this field does to a document without it (a help article has no price):
    # "keep" it (the default: on a mixed corpus only some document types carry a field), or
    # "drop" it. With `[filters] catalog_link`, a document that links to catalog entries is judged
    # by their values instead. Executed inside the engine (is_empty), never after it.
    missing: Literal["keep", "drop"] = "keep"


class FilterSettings(_Section):
    fields: dict[str, FilterField] = Field(default_factory=dict)
    # The payload field that names the catalog entries a document is about (names or ids, e.g.
    # "products"): a filter on a catalog field then applies to a document without that field
    # through its entries ("under $300" keeps the guide to a $249 product). None: no link.
    catalog_link: str | None = None


class AccessSettings(_Section):
    """Session fields that become access constraints, AND-ed into every search.

    Every field is required: a session without it (or with an empty value) searches nothing.
    A field listed in `optional` may be absent, and then constrains nothing."""

    fields: dict[str, str] = Field(default_factory=dict)  # session key -> payload field
    optional: list[str] = Field(default_factory=list)  # session keys that may be absent
    # The session key that holds the user's own account id: a message naming another account id
    # is about someone else's account (understand.third_party), and fails closed.
    account: str | None = None
    # What the plan asks when a message is about another person's account or data.
    third_party_question: str = (
        "I can only help with the account you are signed in to. If you manage this account for someone, "
        "please ask them to contact us, or verify that you are authorised to act for them."
    )

    @model_validator(mode="after")
    def _optional_are_fields(self) -> AccessSettings:
        unknown = [k for k in self.optional if k not in self.fields]
        if unknown:
            raise ValueError(f"optional names no access field: {', '.join(unknown)} (fields: {', '.join(self.fields) or 'none'})")
        if self.account is not None and self.account not in self.fields:
            raise ValueError(f"account names no access field: {self.account!r} (fields: {', '.join(self.fields) or 'none'})")
        return self


# LLM moves (off by default; each needs an `[llm]` provider): the three plan moves share one
# structured call per message; the enrichments are one call each, searched next to the original.
LLMMove = Literal["llm_rewrite", "llm_route", "llm_filters", "multi_query", "hyde", "query2doc", "step_back"]
DeterministicMove = Literal["follow_up", "filters", "spelling", "exact_lookup", "ambiguity"]
Move = Literal[DeterministicMove, LLMMove]  # flattens: get_args(Move) lists every move
LLM_MOVES: tuple[str, ...] = get_args(LLMMove)


def _default_moves() -> list[Move]:
    return ["follow_up", "filters", "spelling", "exact_lookup", "ambiguity"]


class UnderstandingSettings(_Section):
    """Which moves run. A move that is off still leaves a trace step saying so, which is what
    an ablation compares (LLM moves leave none while no `[llm]` provider is configured)."""

    moves: list[Move] = Field(default_factory=_default_moves)
    # A flagged message the learnt topic-shift check (understand/followup/shift.py, trained by
    # bench/topic_shift.py) takes to open a new subject is searched as typed, with no standalone
    # form; it reads the message's similarity to the last `topic_window` turns. false turns it off.
    topic_shift: bool = True
    topic_window: int = Field(default=1, ge=1, le=20)


class Price(_Section):
    """USD per million tokens, input and output."""

    usd_per_m_in: float = Field(ge=0)
    usd_per_m_out: float = Field(ge=0)


class LLMSettings(_Section):
    """The LLM tier. API keys are never in the file: only the NAME of the environment variable.

    Failure policy per route: "open" searches the deterministic plan (the raw message unless a
    deterministic move changed it), "closed" asks. Routes in `routing.high_stakes` are closed
    unless `fail_policy` says otherwise.
    """

    provider: Literal["none", "anthropic", "openai", "scripted", "llamacpp"] = "none"
    model: str | None = None
    base_url: str | None = None  # OpenAI-compatible servers: Ollama, vLLM, llama.cpp server, LM Studio
    api_key_env: str | None = None  # default ANTHROPIC_API_KEY / OPENAI_API_KEY
    timeout_s: float = Field(2.0, gt=0)  # one deadline per message for all its LLM moves, retries included
    timeouts: dict[str, float] = Field(default_factory=dict)  # route -> seconds
    fail_policy: dict[str, Literal["open", "closed"]] = Field(default_factory=dict)  # route -> policy
    fail_closed_question: str = "Sorry, I could not work that out. Could you ask again with the product name?"
    max_retries: int = Field(1, ge=0)  # retries of 429 / 5xx / connection errors, made only when their wait fits in the deadline
    max_response_bytes: int = Field(65_536, ge=1024)  # a reply larger than this is a `too_large` fallback, never parsed
    max_tokens: int = Field(400, ge=16)
    anthropic_output: Literal["json_schema", "tool"] = "json_schema"  # "tool": a forced tool call
    prices: dict[str, Price] = Field(default_factory=dict)  # model -> price
    default_price: Price | None = None  # for a model not in `prices`
    ttft_s: float = Field(0.4, ge=0)  # latency model of `querywise cost`
    tokens_per_s: float = Field(120.0, gt=0)
    fallback_warn_rate: float = Field(0.05, ge=0, le=1)
    n_variants: int = Field(3, ge=1, le=10)  # multi-query
    cache_size: int = Field(10_000, ge=0)  # single-turn results kept; 0 = no cache
    overlap: bool = True  # start retrieval for the raw message while the LLM runs
    scripted_file: Path | None = None  # provider = "scripted": JSONL of recorded responses
    gguf_path: Path | None = None  # provider = "llamacpp": a user-supplied GGUF model file

    @model_validator(mode="after")
    def _provider_needs(self) -> LLMSettings:
        if self.provider == "scripted" and self.scripted_file is None:
            raise ValueError("provider 'scripted' needs scripted_file")
        if self.provider == "llamacpp" and self.gguf_path is None:
            raise ValueError("provider 'llamacpp' needs gguf_path")
        if self.provider in ("anthropic", "openai") and not self.model:
            raise ValueError(f"provider {self.provider!r} needs model")
        return self

    def timeout_for(self, route: str | None) -> float:
        return self.timeouts.get(route or "", self.timeout_s)

    def price_for(self, model: str | None) -> Price | None:
        return self.prices.get(model or "", self.default_price)


class LimitsSettings(_Section):
    """Bounds on one request, so that its time is bounded (every move is linear in its input,
    and these bound the input). A message or a history turn over its limit is an error
    (`understand.limits.LimitError`, an `InputError`); history beyond `max_history_turns` is
    dropped, oldest first: the moves weigh the conversation by recency (the follow-up reads the
    last turn; ambiguity halves a turn's weight for each turn back), and a long conversation is
    ordinary traffic, not a mistake. A rewrite (the LLM's or the deterministic one) longer than
    `max_rewrite_chars` is not read by the guard but rejected."""

    max_message_chars: int = Field(4_000, ge=1)
    max_turn_chars: int = Field(4_000, ge=1)
    max_history_turns: int = Field(20, ge=0)  # the most recent ones are kept
    max_rewrite_chars: int = Field(10_000, ge=1)
    max_record_chars: int = Field(1_000_000, ge=1)  # a corpus file record (JSONL, CSV); folders are chunked


class DeploymentSettings(_Section):
    name: str = "default"
    catalog: Path | None = None  # JSONL of products/entities
    plan_log: Path | None = None  # every plan is appended here next to its raw message (mode 0600)
    # Session values in the log (the access constraints of each plan): "redact" writes
    # "[redacted]", "hash" a short SHA-256 (lets you group requests, not read the value), "keep" the value.
    plan_log_session_values: Literal["redact", "hash", "keep"] = "redact"
    plan_log_max_bytes: int = Field(50_000_000, ge=1_000)  # rotate past this size ...
    plan_log_backups: int = Field(5, ge=0)  # ... keeping this many old files (plans.jsonl.1 is the newest)


class RetrieverFields(_Section):
    """The names the HTTP retriever's protocol uses (`hits` may be a dotted path: "data.results")."""

    query: str = "query"
    k: str = "k"
    filters: str = "filters"
    mode: str | None = "mode"  # "dense" | "bm25" | "hybrid": a hint the endpoint may ignore; None: not sent
    hits: str = "hits"
    id: str = "id"
    score: str = "score"
    text: str = "text"
    title: str = "title"
    payload: str = "payload"


class QdrantSource(_Section):
    """A Qdrant collection querywise did not build (`[retriever] kind = "qdrant"`)."""

    url: str = "http://localhost:6333"  # ":memory:" is qdrant-client's local mode (tests)
    collection: str | None = None
    vector: str | None = None  # the named dense vector; None: the collection's unnamed one
    text_field: str = "text"
    title_field: str | None = "title"
    id_field: str | None = None  # the payload field holding the stable id; None: the point id


class ElasticsearchSource(_Section):
    """An Elasticsearch / OpenSearch index (`[retriever] kind = "elasticsearch"`)."""

    url: str = "http://localhost:9200"
    index: str | None = None
    text_fields: list[str] = Field(default_factory=lambda: ["text"], min_length=1)  # what BM25 (multi_match) searches
    title_field: str | None = "title"
    id_field: str | None = None  # the _source field holding the stable id; None: _id
    vector_field: str | None = None  # a dense_vector field for kNN; None: BM25 only
    api_key_env: str | None = None  # the environment variable holding an API key


class RetrieverSettings(_Section):
    """Which system retrieves: the querywise index (default), an HTTP JSON endpoint, a Python
    function (`module:function`), a Qdrant collection or an Elasticsearch index querywise did not build. `--retriever SPEC` on `ask` and `eval` overrides `kind` and
    `url` / `function`. Filters and access run inside the querywise index; another retriever is
    sent them and its results are checked against them."""

    kind: Literal["index", "http", "function", "qdrant", "elasticsearch"] = "index"
    url: str | None = None
    function: str | None = None
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    headers: dict[str, str] = Field(default_factory=dict)
    headers_env: dict[str, str] = Field(default_factory=dict)  # header -> environment variable holding its value (a token)
    fields: RetrieverFields = Field(default_factory=RetrieverFields)
    qdrant: QdrantSource = Field(default_factory=QdrantSource)
    elasticsearch: ElasticsearchSource = Field(default_factory=ElasticsearchSource)

    @model_validator(mode="after")
    def _names_its_target(self) -> RetrieverSettings:
        if self.kind == "http" and not (self.url or "").startswith(("http://", "https://")):
            raise ValueError("[retriever] kind = 'http' needs url = 'http(s)://host:port/path'")
        if self.kind == "function" and not self.function:
            raise ValueError("[retriever] kind = 'function' needs function = 'module:function'")
        if self.kind == "qdrant" and not self.qdrant.collection:
            raise ValueError("[retriever] kind = 'qdrant' needs [retriever.qdrant] collection")
        if self.kind == "elasticsearch" and not self.elasticsearch.index:
            raise ValueError("[retriever] kind = 'elasticsearch' needs [retriever.elasticsearch] index")
        return self


class RerankSettings(_Section):
    """Reranking the fused top N of each plan's results (`[rerank]`); off by default. A cross-encoder
    is loaded from a local folder (`model`, a sentence-transformers CrossEncoder saved with
    `save()`); none is shipped or downloaded. `kind = "llm"`: the `[llm]` provider ranks the
    candidates in one listwise call through the LLM tier (fail-open)."""

    kind: Literal["none", "cross_encoder", "llm"] = "none"
    model: Path | None = None
    top_n: int = Field(20, ge=1, le=1000)  # how many fused hits the reranker sees
    batch_size: int = Field(32, ge=1, le=1024)
    passage_chars: int = Field(600, ge=50, le=20_000)  # of each candidate, in the LLM's prompt

    @model_validator(mode="after")
    def _has_a_model(self) -> RerankSettings:
        if self.kind == "cross_encoder" and self.model is None:
            raise ValueError("[rerank] kind = 'cross_encoder' needs model = 'path/to/cross-encoder-folder'")
        return self


JWTAlgorithm = Literal["HS256", "RS256", "ES256"]


def _hs256() -> list[JWTAlgorithm]:
    return ["HS256"]


class ServerSettings(_Section):
    """`querywise serve` (`[server]`): where it listens, what it accepts, and whom.

    The session (the access constraints) comes from authentication only: a JWT whose claims named
    like the `[access]` session keys become the session — HS256 with the secret in the environment
    variable `jwt_secret_env`, or RS256 / ES256 with the PEM public key `jwt_public_key` — or, with
    `auth = "gateway"`, a session header set by a trusted gateway and signed (HMAC-SHA256) with the
    secret in `gateway_secret_env`. Secrets are never in the file, only the names of their variables."""

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    workers: int = Field(1, ge=1, le=64)
    auth: Literal["jwt", "gateway"] = "jwt"
    jwt_algorithms: list[JWTAlgorithm] = Field(default_factory=_hs256, min_length=1)
    jwt_secret_env: str = "QUERYWISE_JWT_SECRET"
    jwt_public_key: Path | None = None  # PEM, for RS256 / ES256
    jwt_audience: str | None = None  # required in the token when set
    jwt_issuer: str | None = None
    jwt_leeway_s: float = Field(30.0, ge=0, le=600)  # clock skew allowed on exp / nbf
    gateway_secret_env: str = "QUERYWISE_GATEWAY_SECRET"
    gateway_header: str = "x-querywise-session"  # base64url JSON {"session": {...}, "exp": unix seconds}
    gateway_signature_header: str = "x-querywise-signature"  # hex HMAC-SHA256 of the session header's value
    max_body_bytes: int = Field(262_144, ge=1024)  # a larger request is 413
    rate_limit: str | None = "100/second"  # per client (the token's subject), `limits` notation; None: no limit
    graceful_shutdown_s: float = Field(10.0, ge=0)  # in-flight requests get this long to finish on SIGTERM
    # The grant (a token's `scope` claim) that may start triage and eval jobs: they read passages
    # whatever the caller's session is, so they are an operator's, not every user's.
    jobs_scope: str = "querywise:jobs"
    max_queued_jobs: int = Field(4, ge=1, le=1000)

    @model_validator(mode="after")
    def _keys_for_algorithms(self) -> ServerSettings:
        if self.auth == "jwt" and any(a != "HS256" for a in self.jwt_algorithms) and self.jwt_public_key is None:
            raise ValueError("[server] jwt_algorithms RS256 / ES256 need jwt_public_key = 'path/to/public.pem'")
        if self.rate_limit is not None:
            from limits import parse_many

            try:
                parse_many(self.rate_limit)
            except ValueError:
                raise ValueError(f"[server] rate_limit {self.rate_limit!r}: expected e.g. '100/second' or '20/second;1000/minute'") from None
        return self


class Settings(_Section):
    """Everything configurable, with embedded defaults."""

    cache_dir: Path = Field(default_factory=default_cache_dir)
    embedding: EmbeddingSettings = EmbeddingSettings()
    chunking: ChunkingSettings = ChunkingSettings()
    index: IndexSettings = IndexSettings()
    deployment: DeploymentSettings = DeploymentSettings()
    routing: RoutingSettings = RoutingSettings()
    filters: FilterSettings = FilterSettings()
    access: AccessSettings = AccessSettings()
    understanding: UnderstandingSettings = UnderstandingSettings()
    llm: LLMSettings = LLMSettings()
    limits: LimitsSettings = LimitsSettings()
    retriever: RetrieverSettings = RetrieverSettings()
    rerank: RerankSettings = RerankSettings()
    server: ServerSettings = ServerSettings()

    def fails_closed(self, route: str | None) -> bool:
        """Whether an LLM failure on `route` asks (closed) rather than searching (open)."""
        policy = self.llm.fail_policy.get(route or "")
        return policy == "closed" if policy is not None else route in self.routing.high_stakes

    def route_references(self) -> list[tuple[str, str]]:
        """(config key, route name) for every setting that names a route."""
        llm = [(f"llm.timeouts.{r}", r) for r in self.llm.timeouts] + [(f"llm.fail_policy.{r}", r) for r in self.llm.fail_policy]
        return self.routing.route_references() + llm

    @model_validator(mode="after")
    def _routes_exist(self) -> Settings:
        # `RoutingSettings` checks its own references; the LLM section's are checked here. With
        # routes declared only by an examples file, `load_settings` checks all of them against
        # its labels (this model does no I/O). `model_copy(update=...)` validates again (`_Section`).
        routing = self.routing
        if routing.routes or routing.examples_file is None:
            check_routes_declared({r.name for r in routing.routes}, self.route_references()[len(routing.route_references()) :])
        return self


class ConfigError(ValueError):
    """A settings file that cannot be read or does not validate; the message says where."""


_PATH_KEYS = {
    ("deployment", "catalog"), ("deployment", "plan_log"), ("rerank", "model"), ("routing", "examples_file"), ("routing", "encoder"), ("llm", "scripted_file"), ("llm", "gguf_path"),
    ("server", "jwt_public_key"),
}


def _resolve_paths(data: dict[str, object], base: Path) -> None:
    """Paths in a config file are relative to that file, not to the working directory."""
    for section, key in _PATH_KEYS:
        table = data.get(section)
        if isinstance(table, dict) and isinstance(table.get(key), str):
            table[key] = str((base / table[key]).resolve())
    if isinstance(data.get("cache_dir"), str):
        data["cache_dir"] = str((base / str(data["cache_dir"])).expanduser().resolve())


def write_settings_file(source: Path | None, target: Path, changes: Mapping[str, Mapping[str, Any]]) -> Settings:
    """Write `source` (None: an empty file) to `target` with `changes` ({section: {key: value}})
    set, keeping its comments and layout (tomlkit); relative paths in it are rewritten to stay
    right from `target`'s folder. Returns the settings `target` now loads (a ConfigError if not)."""
    import tomlkit

    doc = tomlkit.parse(source.read_text(encoding="utf-8")) if source is not None else tomlkit.document()
    if source is not None and source.resolve().parent != target.resolve().parent:
        old, new = source.resolve().parent, target.resolve().parent
        rebase = [(section, key) for section, key in _PATH_KEYS] + [(None, "cache_dir")]
        for section, key in rebase:
            table: Any = doc if section is None else doc.get(section)
            if isinstance(table, MutableMapping) and isinstance(table.get(key), str) and not Path(str(table[key])).expanduser().is_absolute():
                table[key] = os.path.relpath((old / str(table[key])).resolve(), new)
    for section, values in changes.items():
        table = doc.get(section)
        if table is None:
            table = tomlkit.table()
            doc[section] = table
        for key, value in values.items():
            table[key] = value
    target.write_text(tomlkit.dumps(doc), encoding="utf-8")
    return load_settings(target)


def _read_toml(p: Path) -> dict[str, Any]:
    """The TOML table of file `p`; a ConfigError naming the file (and line) otherwise."""
    import tomllib

    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{p}: is a folder, not a settings file") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{p}:{line}: not UTF-8 text ({exc.reason}); TOML files are UTF-8: save it as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{p}: invalid TOML: arrays or tables nested too deeply") from None
    except ValueError as exc:  # an integer longer than Python converts
        long = re.search(rf"\d[\d_]{{{sys.get_int_max_str_digits() - 1},}}", text)
        where = f"{p}:{text.count(chr(10), 0, long.start()) + 1}" if long else str(p)
        raise ConfigError(f"{where}: invalid TOML: {exc}".split("; use sys.set_int_max_str_digits")[0]) from None


def _problems(exc: ValidationError) -> str:
    """Pydantic's errors as `key: problem; ...` (a validator that names its key says it once)."""
    out = []
    for e in exc.errors():
        loc, msg = ".".join(map(str, e["loc"])), e["msg"].removeprefix("Value error, ")
        out.append(msg if not loc or msg.startswith(loc) else f"{loc}: {msg}")
    return "; ".join(out)


def _plan_log_problem(log: Path) -> str | None:
    """Why plans cannot be appended to `log`, or None. Checked when settings are loaded, so a
    bad plan log stops a command before it searches, not after."""
    try:
        if log.is_dir():
            return f"{log} is a folder; name a file to append plans to"
        if log.exists():
            return None if os.access(log, os.W_OK) else f"{log} is not writable"
        parent = log.parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            return f"{log} cannot be created: {parent} is a file, not a folder"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"{log} cannot be created: the folder {parent} is not writable"
    except OSError as exc:
        return f"{log}: {exc.strerror or exc}"
    return None


def _check_files(s: Settings, p: Path) -> None:
    """What only the file system can tell: the encoder folder exists, the plan log can be written,
    and, when routes are declared by the examples file alone, every route named is one of its labels."""
    encoder = s.routing.encoder
    if encoder is not None and not encoder.is_dir():
        raise ConfigError(f"{p}: routing.encoder: {encoder}: no such folder; fine-tune one with `querywise router-train`, or remove the key")
    if s.deployment.plan_log is not None and (problem := _plan_log_problem(s.deployment.plan_log)):
        raise ConfigError(f"{p}: deployment.plan_log: {problem}")
    examples = s.routing.examples_file
    if examples is None:
        return
    declared = {r.name for r in s.routing.routes}
    labels: set[str] = set()
    try:
        for line, rec in read_jsonl(examples):
            label = rec.get("label")
            if not isinstance(rec.get("text"), str) or not isinstance(label, str):
                raise InputError(examples, line, 'expected {"text": ..., "label": ...}')
            if declared and label not in declared:
                raise InputError(examples, line, f"label {label!r} is not a declared route (routes: {', '.join(sorted(declared))}); add it to [[routing.routes]]")
            labels.add(label)
    except InputError as exc:
        raise ConfigError(f"{p}: routing.examples_file: {exc}") from None
    if not declared:
        try:
            check_routes_declared(labels, s.route_references(), source=f"the labels of {examples.name}")
        except ValueError as exc:
            raise ConfigError(f"{p}: {exc}") from None


def load_settings(path: Path | str | None) -> Settings:
    """Settings from a TOML file, or the embedded defaults when `path` is None. Paths in the
    file are relative to it. Anything wrong — unreadable or invalid TOML, an unknown section or
    key, a bad value, a route nobody declared, a missing encoder folder, a plan log that cannot
    be written — is a `ConfigError` naming the file and the key (or line).

    >>> load_settings(None).index.rrf_k
    60
    """
    if path is None:
        return Settings()
    p = Path(path)
    data = _read_toml(p)
    unknown = sorted(set(data) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"{p}: unknown section(s) {', '.join(unknown)}; known: {', '.join(Settings.model_fields)}")
    _resolve_paths(data, p.parent)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{p}: {_problems(exc)}") from None
    _check_files(settings, p)
    return settings
