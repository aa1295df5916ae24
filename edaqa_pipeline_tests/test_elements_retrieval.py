"""TechDocRAG element graph: retrieval on an in-memory graph, and the assets (``materialize``
on an ephemeral instance) with retrieval end to end on a tiny index."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from edaqa_pipeline.graphs.elements import graph
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.parsing.markdown import parse_markdown
from edaqa_pipeline_tests._helpers_elements import PLACER, ROUTER

# --- retrieval on an in-memory graph (the packaged MiniLM encoder) ----------------------------


def memory_retriever(blocks_by_doc: dict[str, list[dict[str, Any]]]):  # type: ignore[no-untyped-def]
    from edaqa_pipeline.graphs.elements import store
    from edaqa_pipeline.graphs.elements.index import ElementIndex
    from edaqa_pipeline.methods.techdoc.retriever import TechDocRetriever
    from edaqa_pipeline.retrieval.embedder import Embedder
    from edaqa_pipeline.retrieval.encoders import base_encoder

    rows, edges = graph.build_corpus(blocks_by_doc)
    nodes, edge_df = graph.frames(rows, edges)
    encoder = base_encoder()
    index = ElementIndex(nodes, edge_df, store.embed_summaries(nodes, Embedder(encoder)))
    return TechDocRetriever(index, encoder, parallel_encode=False)


def test_version_question_bundles_the_prior_revision() -> None:
    old = PLACER.replace("Default 0.7.", "Default 0.6.")
    retriever = memory_retriever({
        "docs-2024/placer.md": parse_markdown(old.encode(), "docs-2024/placer.md")[1],
        "docs/placer.md": parse_markdown(PLACER.encode(), "docs/placer.md")[1],
    })
    items = retriever.retrieve("What changed for the -density option of place_cells in the latest release?", 10)
    assert items.trace["intent"] == "version"
    docs = {i.doc for i in items}
    assert docs == {"docs/placer.md", "docs-2024/placer.md"}
    text = "\n".join(i.text for i in items)
    assert "Default 0.7." in text and "Default 0.6." in text
    assert any(i.path == "techdoc:version_of" or i.path == "techdoc:supersedes" for i in items)


def test_cross_reference_question_bundles_the_cited_table() -> None:
    retriever = memory_retriever({"placer.md": parse_markdown(PLACER.encode(), "placer.md")[1]})
    items = retriever.retrieve("The placer overview says see Section 2.1 and Table 1: what do they clarify?", 10)
    assert items.trace["intent"] == "cross_reference"
    text = "\n".join(i.text for i in items)
    assert "### 2.1 Place Cells" in text and "| Switch Name | Description |" in text
    assert sum(len(i.text) for i in items) <= 2048 * 4


def test_factory_rebuilds_the_graph_when_the_assets_are_missing(tmp_path: Path) -> None:
    """An index built before the element assets were registered: the factory builds the graph
    from the stored parsed_documents and encodes the summaries itself."""
    import numpy as np
    import polars as pl

    from edaqa_pipeline.graphs.elements import store
    from edaqa_pipeline.methods.techdoc.retriever import make_techdoc
    from edaqa_pipeline.model import BLOCKS_SCHEMA, frame
    from edaqa_pipeline.retrieval.encoders import base_encoder
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

    folder = tmp_path / "tables" / "parsed_documents"
    folder.mkdir(parents=True)
    frame(parse_markdown(PLACER.encode(), "placer.md")[1], BLOCKS_SCHEMA).write_parquet(folder / "placer.md.parquet")
    nodes, edges, from_assets = store.load_graph(tmp_path, ["placer.md"])
    assert not from_assets and nodes.height and edges.height
    encoder = base_encoder()  # a snapshot of an index without chunks: only the elements matter
    snapshot = IndexSnapshot(storage=tmp_path, documents=["placer.md"], chunks=pl.DataFrame(),
                             chunk_vectors=np.zeros((0, encoder.dim), np.float32), units=pl.DataFrame(),
                             unit_vectors=np.zeros((0, encoder.dim), np.float32), unit_chunk_rows=[],
                             lancedb_uri=str(tmp_path / "lancedb"), base=encoder)
    retriever = make_techdoc(snapshot)
    assert retriever.index.vectors.shape == (nodes.height, snapshot.base.dim)
    items = retriever.retrieve("What does the -density option of place_cells do?", 10)
    assert "| `-density` | Target density" in "\n".join(i.text for i in items)


# --- assets + retrieval end to end ------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Two manuals indexed with ``index_corpus``; then the element assets materialised on an
    ephemeral instance against the same storage; then the ``techdoc`` retriever."""
    from dagster import DagsterInstance, materialize

    from edaqa_pipeline.assets.partitions import DOCUMENTS
    from edaqa_pipeline.cli.index import index_corpus
    from edaqa_pipeline.definitions import build_definitions
    from edaqa_pipeline.methods.techdoc.retriever import make_techdoc
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot
    from edaqa_pipeline_tests.dagster_fixtures import (
        make_settings,
        offline_environment,
        write_corpus,
    )

    root = tmp_path_factory.mktemp("techdoc")
    corpus = write_corpus(root / "corpus", {"placer.md": PLACER, "router.md": ROUTER})
    storage = root / "storage"
    with offline_environment():
        report = index_corpus(corpus, storage, log=lambda *_: None)
        assert not report.failed
        defs = build_definitions(make_settings(corpus, storage))
        assets = list(defs.assets or [])  # elements and element_graph are registered there
        resources = dict(defs.resources or {})
        instance = DagsterInstance.ephemeral()
        instance.add_dynamic_partitions(DOCUMENTS, ["placer.md", "router.md"])
        runs = [materialize(assets, selection=["elements"], partition_key=key, instance=instance,
                            resources=resources, raise_on_error=False) for key in ("placer.md", "router.md")]
        for _ in range(2):  # the second run must reuse every summary vector
            runs.append(materialize(assets, selection=["element_graph"], instance=instance,
                                    resources=resources, raise_on_error=False))
        snapshot = IndexSnapshot.load(storage)
        retriever = make_techdoc(snapshot)
    return corpus, storage, runs, retriever


def test_assets_materialise_with_passing_checks(tiny_index) -> None:
    _, storage, runs, _ = tiny_index
    for run in runs:
        assert run.success
        evaluations = run.get_asset_check_evaluations()
        assert evaluations and all(e.passed for e in evaluations), [(e.check_name, e.metadata) for e in evaluations]
    names = {e.check_name for e in runs[-1].get_asset_check_evaluations()}
    assert names == {"no_dangling_edge", "every_node_has_provenance", "step_next_chains", "index_matches_elements"}
    nodes = pl.read_parquet(storage / "tables" / "elements" / "placer.md.parquet")
    assert set(graph.ELEMENTS_SCHEMA) == set(nodes.columns)
    edges = pl.read_parquet(storage / "tables" / "element_graph.parquet")
    assert "markdown_link" in edges["rule"].to_list()
    from edaqa_pipeline.graphs.elements import store
    from edaqa_pipeline.retrieval import lance_store
    from edaqa_pipeline.retrieval.embedder import text_hash
    from edaqa_pipeline.retrieval.encoders import base_encoder

    table = lance_store.connect(str(storage / "lancedb")).open_table("elements").to_arrow()
    elements = pl.concat([pl.read_parquet(p) for p in sorted((storage / "tables" / "elements").glob("*.parquet"))])
    assert table.num_rows == elements.height
    stored = store.stored_vectors(str(storage / "lancedb"))
    assert stored is not None and set(stored["encoder_id"].to_list()) == {base_encoder().encoder_id}
    by_id = dict(zip(stored["element_id"].to_list(), stored["text_hash"].to_list(), strict=True))
    assert all(by_id[e] == text_hash(s) for e, s in zip(elements["element_id"], elements["summary"], strict=True))
    assert table.schema.field("vector").type.list_size == base_encoder().dim


def test_element_graph_rerun_reuses_every_summary_vector(tiny_index) -> None:
    _, _, runs, _ = tiny_index

    def meta(run) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        (event,) = run.asset_materializations_for_node("element_graph")
        return {k: v.value for k, v in event.metadata.items()}

    first, second = meta(runs[-2]), meta(runs[-1])
    assert first["summaries_embedded"] == first["elements"] > 0 and first["summaries_reused"] == 0
    assert second["summaries_embedded"] == 0 and second["summaries_reused"] == second["elements"]


def _check_citations(corpus: Path, items: list[EvidenceItem]) -> None:
    for item in items:
        lines = (corpus / item.doc).read_text().split("\n")[item.start_line - 1 : item.end_line]
        for line in item.text.split("\n"):
            assert line in lines, (item.doc, item.start_line, item.end_line, line)


def test_retrieval_option_question_returns_row_with_header(tiny_index) -> None:
    corpus, _, _, retriever = tiny_index
    items = retriever.retrieve("What does the -density option of place_cells do?", 10)
    assert items and len(items) <= 10
    text = "\n".join(i.text for i in items)
    assert "| `-density` | Target density" in text and "| Switch Name | Description |" in text
    assert items[0].path.startswith("techdoc:") and items[0].doc == "placer.md"
    assert sum(len(i.text) for i in items) <= 2048 * 4
    assert all(i.chunk_id == "" and i.element_ids and all(e.startswith("el_") for e in i.element_ids) for i in items)
    _check_citations(corpus, items)


def test_retrieval_procedure_bundles_neighbouring_steps_and_warning(tiny_index) -> None:
    corpus, _, _, retriever = tiny_index
    items = retriever.retrieve("How do I legalize a placement with check_placement?", 10)
    assert items.trace["intent"] == "procedure"
    text = "\n".join(i.text for i in items)
    for needle in ("1. Run `place_cells", "2. Run `check_placement`", "3. Write the result", "PLC-0042"):
        assert needle in text
    _check_citations(corpus, items)


def test_retrieval_figure_and_identifier_questions(tiny_index) -> None:
    corpus, _, _, retriever = tiny_index
    items = retriever.retrieve("What does Figure 1 show about cell density?", 10)
    text = "\n".join(i.text for i in items)
    assert "*Figure 1: Cell density after placement.*" in text and "![Density map]" in text
    items = retriever.retrieve("Which layers does ROUTE_LAYERS select?", 10)
    assert items[0].doc == "router.md" and "ROUTE_LAYERS" in items[0].text
    fuzzy = retriever.retrieve("ROUTE_LAYER5 setting", 10)  # OCR-damaged identifier
    assert fuzzy and fuzzy[0].doc == "router.md"
    _check_citations(corpus, items)


def test_retrieval_latency_excluding_nothing(tiny_index) -> None:
    _, _, _, retriever = tiny_index
    retriever.retrieve("warm up", 10)
    started = time.perf_counter()
    for _ in range(5):
        retriever.retrieve("How do I place cells with a target density?", 10)
    assert (time.perf_counter() - started) / 5 < 2.0  # generous: shared CI machines
