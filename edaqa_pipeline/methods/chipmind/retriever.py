"""The ``chipmind`` retriever (ChipMind, paper 001) and its ablations.

``retrieve(query, k)`` runs the reasoning loop (``reasoning``, Algorithm 2) over retrieval
steps on the ChipKG (``search``: PPR, adaptive top-K of Algorithm 1, CSA filter) and returns a
``Retrieval``: the gathered context cut at k, one step per retrieval (for
``system_recall@k``), the trace of every reasoning step and the timings. The reasoning steps
are LLM tasks (``tasks``): with ``llm`` a real model answers them, without one the offline
client runs their rules (the default, deterministic path). The retriever keeps no per-call
state, so one instance can serve concurrent queries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from edaqa_pipeline.graphs.chipkg.graph import KGGraph, load_graph
from edaqa_pipeline.graphs.chipkg.llm_task import uses_model
from edaqa_pipeline.llm import OfflineClient
from edaqa_pipeline.methods.chipmind.config import ChipMindConfig
from edaqa_pipeline.methods.chipmind.reasoning import ReasoningLoop
from edaqa_pipeline.methods.chipmind.search import KGSearch
from edaqa_pipeline.retrieval.record import Retrieval


@dataclass
class ChipMindRetriever:
    snapshot: Any  # IndexSnapshot
    graph: KGGraph
    config: ChipMindConfig = field(default_factory=ChipMindConfig)
    name: str = "chipmind"
    client: Any = None  # LLMClient; None / offline -> the offline rules

    def __post_init__(self) -> None:
        model = uses_model(self.client)
        self.search = KGSearch(self.snapshot, self.graph, self.config,
                               self.client if model else OfflineClient(), uses_model=model)

    def retrieve(self, query: str, k: int) -> Retrieval:
        return ReasoningLoop(self.search, self.name).run(query, k)


@lru_cache(maxsize=4)
def _graph_for(storage: str, mtime_ns: int, dim: int) -> KGGraph:
    return load_graph(storage, dim)


def make_chipmind(snapshot: Any, name: str = "chipmind", *, llm: Any = None, **overrides: Any) -> ChipMindRetriever:
    """A ChipMind retriever over the KG stored next to ``snapshot`` (loaded once per storage
    root and build); ``llm``: an LLM client for the reasoning tasks (None = offline rules);
    ``overrides``: ``ChipMindConfig`` fields."""
    from edaqa_pipeline.graphs.chipkg.store import NODES_TABLE
    from edaqa_pipeline.storage.tables import table_path

    path = table_path(snapshot.storage / "tables", NODES_TABLE)
    mtime = path.stat().st_mtime_ns if path.is_file() else 0
    graph = _graph_for(str(snapshot.storage), mtime, snapshot.dim)
    return ChipMindRetriever(snapshot, graph, replace(ChipMindConfig(), **overrides), name=name, client=llm)


def chipmind(snapshot: Any, llm: Any = None) -> ChipMindRetriever:
    return make_chipmind(snapshot, "chipmind", llm=llm)


def chipmind_no_adaptive_k(snapshot: Any, llm: Any = None) -> ChipMindRetriever:
    return make_chipmind(snapshot, "chipmind_no_adaptive_k", llm=llm, adaptive_k=False)


def chipmind_no_filter(snapshot: Any, llm: Any = None) -> ChipMindRetriever:
    return make_chipmind(snapshot, "chipmind_no_filter", llm=llm, anchor_filter=False)


def chipmind_no_iteration(snapshot: Any, llm: Any = None) -> ChipMindRetriever:
    return make_chipmind(snapshot, "chipmind_no_iteration", llm=llm, iterate=False)


FACTORIES: dict[str, Callable[..., ChipMindRetriever]] = {
    "chipmind": chipmind,
    "chipmind_no_adaptive_k": chipmind_no_adaptive_k,
    "chipmind_no_filter": chipmind_no_filter,
    "chipmind_no_iteration": chipmind_no_iteration,
}
