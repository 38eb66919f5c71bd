"""One settings object, passed down explicitly. Loaded from TOML by deployments; every field has
an embedded default so the demo and a first `querywise index` need no file at all.

One module per concern: `indexing` ([embedding], [chunking], [index]), `understanding`
([routing], [filters], [access], [understanding], [limits], [ambiguity]), `llm`, `retrieval` ([retriever],
[rerank]), `server`, `settings` (`Settings` and [deployment]), `loading` (the files)."""

from querywise.config._section import default_cache_dir
from querywise.config.indexing import EMBEDDING_KINDS, ChunkingSettings, EmbeddingSettings, IndexSettings
from querywise.config.llm import LLMSettings, Price
from querywise.config.loading import ConfigError, load_settings, write_settings_file
from querywise.config.retrieval import ElasticsearchSource, QdrantSource, RerankSettings, RetrieverFields, RetrieverSettings
from querywise.config.server import JWTAlgorithm, ServerSettings
from querywise.config.settings import DeploymentSettings, Settings
from querywise.config.understanding import (
    LLM_MOVES,
    AccessSettings,
    AmbiguitySettings,
    DeterministicMove,
    FilterField,
    FilterSettings,
    IdentifierRule,
    LimitsSettings,
    LLMMove,
    Move,
    PlanSlice,
    RouteSpec,
    RoutingSettings,
    SpellingSettings,
    UnderstandingSettings,
    check_routes_declared,
)

__all__ = [
    "EMBEDDING_KINDS",
    "LLM_MOVES",
    "AccessSettings",
    "AmbiguitySettings",
    "ChunkingSettings",
    "ConfigError",
    "DeploymentSettings",
    "DeterministicMove",
    "ElasticsearchSource",
    "EmbeddingSettings",
    "FilterField",
    "FilterSettings",
    "IdentifierRule",
    "IndexSettings",
    "JWTAlgorithm",
    "LLMMove",
    "LLMSettings",
    "LimitsSettings",
    "Move",
    "PlanSlice",
    "Price",
    "QdrantSource",
    "RerankSettings",
    "RetrieverFields",
    "RetrieverSettings",
    "RouteSpec",
    "RoutingSettings",
    "ServerSettings",
    "Settings",
    "SpellingSettings",
    "UnderstandingSettings",
    "check_routes_declared",
    "default_cache_dir",
    "load_settings",
    "write_settings_file",
]
