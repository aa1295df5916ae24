"""The method registry: every retrieval method declared once.

A ``Method`` names its paper, its factory (``module:function``, imported only when the method
is built), the tables it needs beyond the core build and the optional build that makes them
(``edaqa index --with NAME``). Everything else derives from this list: the CLI's ``--method``
choices and default, ``available_methods``, the ``--with`` jobs (``jobs.py``), the
``eval_reports`` asset's dependencies and the README's method table
(``method_table_markdown``; a test keeps the README in step).

A factory is called as ``factory(snapshot, llm=client)``: ``llm`` is an ``LLMClient`` or
None (the offline rules); a method that does not use a model ignores it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_METHOD = "edaqa"


@dataclass(frozen=True)
class BuildOption:
    """An optional build after the core one: ``edaqa index --with NAME`` runs job ``job``."""

    name: str
    job: str
    assets: tuple[str, ...]
    description: str


@dataclass(frozen=True)
class Method:
    name: str
    paper: str  # "000 function-aware retrieval", ..., "baseline", "EDAQA"
    summary: str
    factory: str  # "module:function"
    tables: tuple[str, ...] = ()  # tables beyond the core build
    build: str = ""  # the BuildOption that makes ``tables`` ("" = the core build)
    allow_empty: frozenset[str] = frozenset()  # tables whose existence is enough
    ablation_of: str = ""  # the method this row ablates (report grouping)

    def load_factory(self) -> Callable[..., Any]:
        module, _, attribute = self.factory.partition(":")
        return getattr(importlib.import_module(module), attribute)


# Order: the optional builds run in this order (eval last: it compares what was built before).
BUILD_OPTIONS: tuple[BuildOption, ...] = (
    BuildOption("chipkg", "build_chip_kg", ("chip_kg_nodes", "chip_kg_triples"),
                "ChipKG (paper 001): sentence IR, anchors, triples, node vectors"),
    BuildOption("techdoc", "build_element_graph", ("element_graph",),
                "TechDocRAG (paper 003): cross-document element edges"),
    BuildOption("train", "train_encoder", ("training_pairs", "trained_encoder", "tuned_embeddings"),
                "function-aware encoder (paper 000): unit-derived queries, LoRA training, tuned vectors"),
    BuildOption("eval", "evaluate", ("eval_reports",),
                "the evaluation report over every built method"),
)

_B = "edaqa_pipeline.methods.baselines"
_FA = "edaqa_pipeline.methods.fa.retriever"
_CM = "edaqa_pipeline.methods.chipmind.retriever"
_CHIPKG = ("chip_kg_nodes",)
_ED = "edaqa_pipeline.methods.edaqa.retriever"

METHODS: tuple[Method, ...] = (
    Method("edaqa", "EDAQA", "the default: lexical, identifier, dense, unit and (when built) "
           "ChipKG recall over chunks fused with element-graph bundles, packed to the budget",
           f"{_ED}:make_edaqa"),
    *(Method(name, "EDAQA", f"ablation: {what}", f"{_ED}:{name}", ablation_of="edaqa")
      for name, what in (("edaqa_no_lexical", "without BM25 recall"),
                         ("edaqa_no_identifiers", "without identifier recall"),
                         ("edaqa_no_dense", "without dense chunk recall"),
                         ("edaqa_no_units", "without the functional-unit path"),
                         ("edaqa_no_chipkg", "without the ChipKG path"),
                         ("edaqa_no_elements", "without the element-graph bundles"),
                         ("edaqa_untrained", "with the base encoder instead of the trained one"),
                         ("edaqa_no_bundles", "whole chunks instead of answer bundles"))),
    Method("bm25", "baseline", "BM25 over chunks", f"{_B}:make_bm25"),
    Method("dense", "baseline", "base encoder over chunks (the primary paper's Chunk RAG)",
           f"{_B}:make_dense"),
    Method("hybrid_rrf", "baseline", "BM25 + dense by reciprocal rank fusion (k = 60)",
           f"{_B}:make_hybrid_rrf"),
    Method("fa_units", "000 function-aware retrieval", "unit path only", f"{_FA}:make_fa_units",
           ablation_of="fa_hybrid"),
    Method("fa_hybrid", "000 function-aware retrieval",
           "Algorithm 1: units + chunks, unified reranker (untrained encoder)", f"{_FA}:make_fa_hybrid"),
    Method("fa_hybrid_tuned", "000 function-aware retrieval",
           "Algorithm 1 with the trained LoRA encoder", f"{_FA}:make_fa_hybrid_tuned",
           tables=("tuned_embeddings",), build="train"),
    Method("techdoc", "003 TechDocRAG", "element graph: identifier recall, intent expansion, "
           "summary rerank, raw bundles", "edaqa_pipeline.methods.techdoc.retriever:make_techdoc",
           tables=("element_graph",), build="techdoc", allow_empty=frozenset({"element_graph"})),
    Method("chipmind", "001 ChipMind", "ChipKG + PPR, adaptive top-K, anchor filter, iterations",
           f"{_CM}:chipmind", tables=_CHIPKG, build="chipkg"),
    Method("chipmind_no_adaptive_k", "001 ChipMind", "ablation: fixed top-K",
           f"{_CM}:chipmind_no_adaptive_k", tables=_CHIPKG, build="chipkg", ablation_of="chipmind"),
    Method("chipmind_no_filter", "001 ChipMind", "ablation: no anchor filter",
           f"{_CM}:chipmind_no_filter", tables=_CHIPKG, build="chipkg", ablation_of="chipmind"),
    Method("chipmind_no_iteration", "001 ChipMind", "ablation: one retrieval step",
           f"{_CM}:chipmind_no_iteration", tables=_CHIPKG, build="chipkg", ablation_of="chipmind"),
    Method("hwkg", "002 hardware KGs", "block-first retrieval over datasheet property graphs",
           "edaqa_pipeline.methods.hwkg.retriever:make_hwkg", tables=("hardware_kgs",)),
)

METHOD_NAMES: tuple[str, ...] = tuple(m.name for m in METHODS)


class UnknownMethodError(ValueError):
    """A method name that is not in the registry."""


class MethodNotBuiltError(RuntimeError):
    """The storage root lacks the tables a method needs; the message says how to build them."""


def method(name: str) -> Method:
    for m in METHODS:
        if m.name == name:
            return m
    raise UnknownMethodError(f"unknown method {name!r}; choose from {', '.join(METHOD_NAMES)}")


def build_option(name: str) -> BuildOption:
    for option in BUILD_OPTIONS:
        if option.name == name:
            return option
    names = ", ".join(o.name for o in BUILD_OPTIONS)
    raise ValueError(f"unknown build {name!r}; --with takes {names}")


def method_tables() -> tuple[str, ...]:
    """Every table some method needs beyond the core build (the eval asset's dependencies)."""
    return tuple(dict.fromkeys(t for m in METHODS for t in m.tables))


def missing_tables(name: str, storage: Path) -> list[str]:
    """The tables ``name`` needs that are absent (or empty) under ``storage``."""
    import polars as pl

    from edaqa_pipeline.storage.tables import table_path

    m = method(name)
    missing = []
    for table in m.tables:
        path = table_path(Path(storage) / "tables", table)
        if not path.is_file() or (table not in m.allow_empty and pl.scan_parquet(path).select(pl.len()).collect().item() == 0):
            missing.append(table)
    return missing


def available_methods(storage: Path) -> list[str]:
    """Every registered method (registry order) whose tables exist under ``storage``."""
    return [m.name for m in METHODS if not missing_tables(m.name, storage)]


def how_to_build(name: str, storage: Path) -> str:
    """The sentence a user needs when ``name`` is not built in ``storage``."""
    m = method(name)
    if m.build:
        also = f" (or `edaqa train --storage {storage}`)" if m.build == "train" else ""
        return (f"method {name!r} needs {', '.join(m.tables)}, which {storage} lacks: build it with "
                f"`edaqa index --storage {storage} --with {m.build}`{also}")
    if name == "hwkg":
        return f"method 'hwkg' needs a PDF datasheet in the corpus; {storage} has no hardware KG"
    return f"method {name!r} needs the core index: run `edaqa index --storage {storage}` first"


def make_retriever(name: str, snapshot: Any, *, llm: Any = None) -> Any:
    """The retriever of method ``name`` over an ``IndexSnapshot``; ``MethodNotBuiltError``
    (with the ``--with`` hint) when its tables are missing."""
    m = method(name)
    if missing_tables(name, snapshot.storage):
        raise MethodNotBuiltError(how_to_build(name, snapshot.storage))
    return m.load_factory()(snapshot, llm=llm)


def method_table_markdown() -> str:
    """The README's method table."""
    lines = ["| method | paper | what it does | needs |", "|---|---|---|---|"]
    for m in METHODS:
        needs = f"`--with {m.build}`" if m.build else ("a PDF in the corpus" if m.name == "hwkg" else "core build")
        default = " (default)" if m.name == DEFAULT_METHOD else ""
        lines.append(f"| `{m.name}`{default} | {m.paper} | {m.summary} | {needs} |")
    return "\n".join(lines)
