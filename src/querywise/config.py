"""One settings object, passed down explicitly. Loaded from TOML by deployments (later
sections add routes, filters and thresholds); every field has an embedded default so the
demo and a first `querywise index` need no file at all."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "AccessSettings",
    "ChunkingSettings",
    "ConfigError",
    "DeploymentSettings",
    "EmbeddingSettings",
    "FilterField",
    "FilterSettings",
    "IdentifierRule",
    "IndexSettings",
    "LLMMove",
    "LLMSettings",
    "Move",
    "Price",
    "RouteSpec",
    "RoutingSettings",
    "Settings",
    "UnderstandingSettings",
    "default_cache_dir",
    "load_settings",
]


def default_cache_dir() -> Path:
    """`$QUERYWISE_CACHE_DIR`, else `$XDG_CACHE_HOME/querywise`, else `~/.cache/querywise`."""
    if env := os.environ.get("QUERYWISE_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "querywise"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EmbeddingSettings(_Section):
    kind: str = "auto"  # "auto" picks the fastest path that keeps the reference numbers
    batch_size: int = Field(64, ge=1)
    cache: bool = True  # on-disk cache keyed by model and text hash


class ChunkingSettings(_Section):
    max_chars: int = Field(1000, ge=50)
    overlap: int = Field(0, ge=0)
    identifier_pattern: str = r"\b[A-Z]{2,}-\d{3,}\b"


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
    depth: int = Field(100, ge=1)  # how deep each list goes into hybrid fusion
    # Payload fields to index for fast filtering; None = every short scalar field.
    payload_indexes: list[str] | None = None


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
    default_route: str | None = None  # applied when the classifier is unsure and no LLM tier is set
    out_of_scope_route: str | None = None
    high_stakes: list[str] = Field(default_factory=list)  # fail closed (ask) on error


class FilterField(_Section):
    """One filterable field of the index payload, as the filter validator sees it."""

    type: Literal["number", "integer", "enum", "keyword", "list"]
    values: list[str] | None = None  # allowed values (enum); or taken from the catalog
    catalog_field: str | None = None  # catalog key whose values are this field's enum
    min: float | None = None
    max: float | None = None
    unit: str | None = None  # e.g. "usd": amounts in other units are converted
    aliases: list[str] = Field(default_factory=list)  # words users say for it ("price", "cost")


class FilterSettings(_Section):
    fields: dict[str, FilterField] = Field(default_factory=dict)


class AccessSettings(_Section):
    """Session fields that become access constraints, AND-ed into every search."""

    fields: dict[str, str] = Field(default_factory=dict)  # session key -> payload field
    required: list[str] = Field(default_factory=list)  # session keys without which nothing is searched


# LLM moves (off by default; each needs an `[llm]` provider): the three plan moves share one
# structured call per message; the enrichments are one call each, searched next to the original.
LLMMove = Literal["llm_rewrite", "llm_route", "llm_filters", "multi_query", "hyde", "query2doc", "step_back"]
DeterministicMove = Literal["follow_up", "filters", "spelling", "ambiguity"]
Move = Literal[DeterministicMove, LLMMove]  # flattens: get_args(Move) lists every move
LLM_MOVES: tuple[str, ...] = get_args(LLMMove)


def _default_moves() -> list[Move]:
    return ["follow_up", "filters", "spelling", "ambiguity"]


class UnderstandingSettings(_Section):
    """Which moves run. A move that is off still leaves a trace step saying so, which is what
    an ablation compares (LLM moves leave none while no `[llm]` provider is configured)."""

    moves: list[Move] = Field(default_factory=_default_moves)


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
    timeout_s: float = Field(2.0, gt=0)
    timeouts: dict[str, float] = Field(default_factory=dict)  # route -> seconds
    fail_policy: dict[str, Literal["open", "closed"]] = Field(default_factory=dict)  # route -> policy
    fail_closed_question: str = "Sorry, I could not work that out. Could you ask again with the product name?"
    max_retries: int = Field(1, ge=0)
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


class DeploymentSettings(_Section):
    name: str = "default"
    catalog: Path | None = None  # JSONL of products/entities
    plan_log: Path | None = None  # every plan is appended here next to its raw message


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

    def fails_closed(self, route: str | None) -> bool:
        """Whether an LLM failure on `route` asks (closed) rather than searching (open)."""
        policy = self.llm.fail_policy.get(route or "")
        return policy == "closed" if policy is not None else route in self.routing.high_stakes

    @model_validator(mode="after")
    def _routes_exist(self) -> Settings:
        names = {r.name for r in self.routing.routes}
        if not names:
            return self
        referenced: list[tuple[str, str | None]] = [(f"routing.rules[{i}].route", r.route) for i, r in enumerate(self.routing.rules)]
        referenced += [("routing.default_route", self.routing.default_route), ("routing.out_of_scope_route", self.routing.out_of_scope_route)]
        referenced += [(f"routing.high_stakes[{i}]", r) for i, r in enumerate(self.routing.high_stakes)]
        referenced += [(f"llm.timeouts.{r}", r) for r in self.llm.timeouts] + [(f"llm.fail_policy.{r}", r) for r in self.llm.fail_policy]
        for where, name in referenced:
            if name is not None and name not in names:
                raise ValueError(f"{where}: unknown route {name!r} (routes: {', '.join(sorted(names))})")
        return self


class ConfigError(ValueError):
    """A settings file that cannot be read or does not validate; the message says where."""


_PATH_KEYS = {("deployment", "catalog"), ("deployment", "plan_log"), ("routing", "examples_file"), ("llm", "scripted_file"), ("llm", "gguf_path")}


def _resolve_paths(data: dict[str, object], base: Path) -> None:
    """Paths in a config file are relative to that file, not to the working directory."""
    for section, key in _PATH_KEYS:
        table = data.get(section)
        if isinstance(table, dict) and isinstance(table.get(key), str):
            table[key] = str((base / table[key]).resolve())
    if isinstance(data.get("cache_dir"), str):
        data["cache_dir"] = str((base / str(data["cache_dir"])).expanduser().resolve())


def load_settings(path: Path | str | None) -> Settings:
    """Settings from a TOML file (sections `[embedding]`, `[chunking]`, `[index]`), or the
    embedded defaults when `path` is None.

    >>> load_settings(None).index.rrf_k
    60
    """
    if path is None:
        return Settings()
    import tomllib

    from pydantic import ValidationError

    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML: {exc}") from None
    unknown = sorted(set(data) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"{p}: unknown section(s) {', '.join(unknown)}; known: {', '.join(Settings.model_fields)}")
    _resolve_paths(data, p.parent)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{p}: {problems}") from None
