"""`Settings`: every section, with embedded defaults; `[deployment]`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from querywise.config._section import _Section, default_cache_dir
from querywise.config.indexing import ChunkingSettings, EmbeddingSettings, IndexSettings
from querywise.config.llm import LLMSettings
from querywise.config.retrieval import RerankSettings, RetrieverSettings
from querywise.config.server import ServerSettings
from querywise.config.understanding import (
    AccessSettings,
    AmbiguitySettings,
    FilterSettings,
    LimitsSettings,
    RoutingSettings,
    SpellingSettings,
    UnderstandingSettings,
    check_routes_declared,
)


class DeploymentSettings(_Section):
    name: str = "default"  # shown in the plan log, the service's /healthz and metrics
    catalog: Path | None = None  # JSONL of products/entities
    plan_log: Path | None = None  # every plan is appended here next to its raw message (mode 0600)
    # Session values in the log (the access constraints of each plan): "redact" writes
    # "[redacted]", "hash" a short SHA-256 (lets you group requests, not read the value), "keep" the value.
    plan_log_session_values: Literal["redact", "hash", "keep"] = "redact"
    plan_log_max_bytes: int = Field(50_000_000, ge=1_000)  # rotate past this size ...
    plan_log_backups: int = Field(5, ge=0)  # ... keeping this many old files (plans.jsonl.1 is the newest)



class Settings(_Section):
    """Everything configurable, with embedded defaults."""

    cache_dir: Path = Field(default_factory=default_cache_dir)  # embeddings, ONNX exports and router state are cached here
    embedding: EmbeddingSettings = EmbeddingSettings()
    chunking: ChunkingSettings = ChunkingSettings()
    index: IndexSettings = IndexSettings()
    deployment: DeploymentSettings = DeploymentSettings()
    routing: RoutingSettings = RoutingSettings()
    filters: FilterSettings = FilterSettings()
    access: AccessSettings = AccessSettings()
    understanding: UnderstandingSettings = UnderstandingSettings()
    ambiguity: AmbiguitySettings = AmbiguitySettings()
    spelling: SpellingSettings = SpellingSettings()
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
    def _filters_are_not_access(self) -> Settings:
        # Access comes from the session only: a filter on the same payload field would be dropped
        # from every plan (`Dropped.access`), so the setting can only be a mistake.
        both = sorted(set(self.filters.fields) & set(self.access.fields.values()))
        if both:
            raise ValueError(f"[filters.fields] {', '.join(both)}: an [access] payload field cannot also be a filter "
                             "(access comes from the session only)")
        return self

    @model_validator(mode="after")
    def _routes_exist(self) -> Settings:
        # `RoutingSettings` checks its own references; the LLM section's are checked here. With
        # routes declared only by an examples file, `load_settings` checks all of them against
        # its labels (this model does no I/O). `model_copy(update=...)` validates again (`_Section`).
        routing = self.routing
        if routing.routes or routing.examples_file is None:
            check_routes_declared({r.name for r in routing.routes}, self.route_references()[len(routing.route_references()) :])
        return self
