"""querywise: the query-side layer of a RAG or search system, and the instrument that
diagnoses its retrieval failures.

    >>> import querywise as qw
    >>> index = qw.build_index(qw.load_corpus("docs/"), "my-index")                  # doctest: +SKIP
    >>> with qw.QueryWise(qw.load_settings("querywise.toml"), index) as deployment:  # doctest: +SKIP
    ...     result = deployment.ask("does it fold?", history=["Aero X2 specs"], session={"market": "eu"})

`QueryWise` is the front door of a deployment (plan, ask, search); `evaluate` and
`triage` are the offline verbs. Importing this package is cheap: torch, ONNX Runtime and
the vector engine load on first use.
"""

from querywise.chunking import Chunker
from querywise.client import Client, ServiceError
from querywise.conditions import AnyOf, Match, NoneOf, Range, Where, WhereSyntaxError, parse_where
from querywise.config import ChunkingSettings, ConfigError, EmbeddingSettings, IndexSettings, Settings, load_settings
from querywise.conversation import Turn
from querywise.corpus import Chunk, CorpusError, load_corpus
from querywise.evaluation.cases import Case, load_beir, load_cases
from querywise.evaluation.compare import compare_runs, load_run
from querywise.evaluation.metrics import parse_metrics
from querywise.evaluation.report import EvalReport, evaluate
from querywise.evaluation.result import EvalResult
from querywise.execute import PlanResult, execute
from querywise.failures import FailureRow
from querywise.files import InputError
from querywise.index import Hit, Index, IndexStoreError, Manifest, build_index, rrf
from querywise.llm import LLMError, Provider, ScriptedProvider
from querywise.plan import Answer, Ask, Assume, Cover, LeftAsk, PlanQuery, QueryPlan, Readings, TraceStep, plan_json_schema
from querywise.retrieve import FunctionRetriever, HTTPRetriever, IndexRetriever, Reordering, Reranker, Retriever, RetrieverError
from querywise.service import QueryWise
from querywise.triage import (
    TriageOptions,
    TriageReport,
    TriageTarget,
    build_report,
    load_failures,
    load_labels,
    load_sources,
    population_of,
    sample_failures,
    triage,
)
from querywise.understand.pipeline import Understander
from querywise.understand.routing.lookup import RouteLookup

__version__ = "0.1.0"

__all__ = [
    "Answer",
    "AnyOf",
    "Ask",
    "Assume",
    "Case",
    "Chunk",
    "Chunker",
    "ChunkingSettings",
    "Client",
    "ConfigError",
    "CorpusError",
    "Cover",
    "EmbeddingSettings",
    "EvalReport",
    "EvalResult",
    "FailureRow",
    "FunctionRetriever",
    "HTTPRetriever",
    "Hit",
    "Index",
    "IndexRetriever",
    "IndexSettings",
    "IndexStoreError",
    "InputError",
    "LLMError",
    "LeftAsk",
    "Manifest",
    "Match",
    "NoneOf",
    "PlanQuery",
    "PlanResult",
    "Provider",
    "QueryPlan",
    "QueryWise",
    "Range",
    "Readings",
    "Reordering",
    "Reranker",
    "Retriever",
    "RetrieverError",
    "RouteLookup",
    "ScriptedProvider",
    "ServiceError",
    "Settings",
    "TraceStep",
    "TriageOptions",
    "TriageReport",
    "TriageTarget",
    "Turn",
    "Understander",
    "Where",
    "WhereSyntaxError",
    "build_index",
    "build_report",
    "compare_runs",
    "evaluate",
    "execute",
    "load_beir",
    "load_cases",
    "load_corpus",
    "load_failures",
    "load_labels",
    "load_run",
    "load_settings",
    "load_sources",
    "parse_metrics",
    "parse_where",
    "plan_json_schema",
    "population_of",
    "rrf",
    "sample_failures",
    "triage",
]
