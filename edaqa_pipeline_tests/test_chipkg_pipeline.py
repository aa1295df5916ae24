"""ChipKG through Dagster and the ChipMind retriever over it: a tiny corpus of three Markdown
manuals plus the sample LDO datasheet, indexed by ``index_corpus`` with the ``build_chip_kg``
job (real Dagster instance, real MiniLM vectors); the incremental rebuild (the asset reads its
previous output through the IO manager) equals a fresh build byte for byte; ``retrieve``
returns a ``Retrieval`` with one step per retrieval and the reasoning trace."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from edaqa_pipeline.graphs.chipkg.store import NODES_TABLE, TRIPLES_TABLE
from edaqa_pipeline.retrieval.record import Retrieval
from edaqa_pipeline.storage.tables import read_table
from edaqa_pipeline_tests.fixtures_index import SAMPLE

DOCS = {
    "grt.md": """# Global Routing

The global routing module in OpenROAD (`grt`) creates route guides.

## Set Routing Alpha

```tcl
set_routing_alpha [-net net_name] alpha
```

The `set_routing_alpha` command enables the Prim-Dijkstra algorithm and trades wirelength
against the maximum path depth from the net driver to its loads.

| Switch Name | Description |
| ----- | ----- |
| `-net` | The name of the net. The default is all nets. |

## Global Route

```tcl
global_route [-verbose]
```

Run `global_route` after placement to create route guides.
""",
    "gui.md": """# Graphical User Interface

## Heat Maps

The GUI shows a routing congestion heat map. Use `gui::show_heatmap Routing` to display
the congestion heat map after global routing.
""",
    "ppl.md": """# Pin Placement

## Place Pin

The `place_pin` command places one pin at a location on a metal layer.

```tcl
place_pin -pin_name name -layer layer -location {x y}
```
""",
}
QUESTION = ("How can I reduce the maximum path depth from the net driver to its loads? "
            "Then how do I display the routing congestion heat map in the GUI?")


def _write_corpus(corpus: Path, docs: dict[str, str]) -> None:
    corpus.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (corpus / name).write_text(text)
    shutil.copy2(SAMPLE / "nimbus_ldo_datasheet.pdf", corpus / "nimbus_ldo_datasheet.pdf")


def _index(corpus: Path, storage: Path) -> None:
    from edaqa_pipeline.cli.index import index_corpus

    index_corpus(corpus, storage, log=lambda *_: None, extra_jobs=("build_chip_kg",))


def _materialization(storage: Path, asset: str):  # type: ignore[no-untyped-def]
    from dagster import AssetKey

    from edaqa_pipeline.cli.index import instance_for

    event = instance_for(storage).get_latest_materialization_event(AssetKey(asset))
    assert event is not None and event.asset_materialization is not None
    return event.asset_materialization.metadata


def _checks(storage: Path) -> dict[str, str]:
    """Status of the latest evaluation of every ChipKG asset check."""
    from dagster import AssetCheckKey, AssetKey

    from edaqa_pipeline.assets.chipkg import CHECKS, VECTOR_CHECK
    from edaqa_pipeline.cli.index import instance_for

    instance = instance_for(storage)
    keys = [AssetCheckKey(AssetKey(asset), name) for name, asset, _, _ in CHECKS]
    keys.append(AssetCheckKey(AssetKey(NODES_TABLE), VECTOR_CHECK))
    out = {}
    for key in keys:
        record = instance.get_latest_asset_check_evaluation_record(key)
        out[key.name] = record.status.value if record is not None else "missing"
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("chipkg")
    corpus, storage = root / "corpus", root / "storage"
    _write_corpus(corpus, DOCS)
    _index(corpus, storage)
    return root, corpus, storage


def test_the_dagster_job_builds_the_kg_with_vectors_and_passing_checks(tiny) -> None:  # type: ignore[no-untyped-def]
    from edaqa_pipeline.retrieval.encoders import configured_encoder

    _, _, storage = tiny
    nodes, triples = read_table(storage / "tables", NODES_TABLE), read_table(storage / "tables", TRIPLES_TABLE)
    assert nodes is not None and triples is not None
    assert set(triples["kind"].unique().to_list()) == {"backbone", "auxiliary", "linking", "normalisation"}
    embedded = nodes.filter(pl.col("kind").is_in(["entity", "statement"]))
    encoder = configured_encoder()
    assert embedded["vector"].null_count() == 0
    assert embedded["vector"].dtype == pl.Array(pl.Float32(), encoder.dim)  # the encoder's width
    assert set(embedded["encoder_id"].to_list()) == {encoder.encoder_id}
    assert nodes.filter(pl.col("kind") == "passage")["vector"].null_count() == nodes.filter(pl.col("kind") == "passage").height
    types = dict(nodes.filter(pl.col("kind") == "entity").select("canonical", "node_type").iter_rows())
    assert types.get("set_routing_alpha") == "command" and types.get("VIN") == "parameter"
    meta = _materialization(storage, NODES_TABLE)
    assert meta["documents"].value == 4 and meta["llm_provider"].value == "offline"
    checks = _checks(storage)
    assert len(checks) == 4 and set(checks.values()) == {"SUCCEEDED"}, checks


def test_incremental_rebuild_reuses_rows_and_equals_a_fresh_build(tiny) -> None:  # type: ignore[no-untyped-def]
    root, corpus, storage = tiny
    before = read_table(storage / "tables", NODES_TABLE)
    _index(corpus, storage)  # nothing changed
    meta = _materialization(storage, NODES_TABLE)
    assert meta["reused_documents"].value == 4 and meta["encoded"].value == 0
    assert read_table(storage / "tables", NODES_TABLE).equals(before)
    # one document changes: it is rebuilt, the others are reused, and the tables equal a
    # fresh build of the changed corpus byte for byte (vectors included)
    changed = {**DOCS, "gui.md": DOCS["gui.md"] + "\nThe `gui::show_heatmap` command also shows placement density.\n"}
    work = root / "changed"
    shutil.copytree(storage, work / "storage")
    _write_corpus(work / "corpus", changed)
    _index(work / "corpus", work / "storage")
    meta = _materialization(work / "storage", NODES_TABLE)
    assert meta["rebuilt_documents"].value == 1 and meta["reused_documents"].value == 3
    assert 0 < meta["encoded"].value < before.height
    _write_corpus(root / "fresh" / "corpus", changed)
    _index(root / "fresh" / "corpus", root / "fresh" / "storage")
    for table in (NODES_TABLE, TRIPLES_TABLE):
        a = read_table(work / "storage" / "tables", table)
        b = read_table(root / "fresh" / "storage" / "tables", table)
        assert a.equals(b), table


def test_chipmind_returns_a_retrieval_with_steps_and_trace(tiny) -> None:  # type: ignore[no-untyped-def]
    from edaqa_pipeline.methods.chipmind.retriever import make_chipmind
    from edaqa_pipeline.registry import make_retriever
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

    _, _, storage = tiny
    snapshot = IndexSnapshot.load(storage)
    # one passage per retrieval (k0 = 1, never expand): only the sub-queries of the reasoning
    # loop can bring the second part's evidence
    single = make_chipmind(snapshot, "single", k0=1, tau=1.0, iterate=False)
    one = single.retrieve(QUESTION, 10)
    assert isinstance(one, Retrieval) and len(one) == 1 and len(one.steps) == 1
    assert one.trace["iterations"] == 1 and one.trace["stop_reason"] == "no_iteration"
    loop = make_chipmind(snapshot, "loop", k0=1, tau=1.0)
    result = loop.retrieve(QUESTION, 10)
    assert not hasattr(loop, "last_trace") and not hasattr(loop, "last_steps")
    docs = {e.doc for e in result}
    assert {"grt.md", "gui.md"} <= docs
    assert any("set_routing_alpha" in e.text for e in result)
    assert any("show_heatmap" in e.text for e in result)
    trace = result.trace
    assert trace["iterations"] == len(result.steps) >= 2 and trace["sub_queries"]
    assert trace["retrieved_set_sizes"][0] == 1 and trace["retrieved_set_sizes"][-1] == len(result)
    assert set(trace["all_retrieved"]) >= {e.chunk_id for e in result}
    # every reasoning round records Reason, DetectUncertainty and (when uncertain) the sub-query
    rounds = [r for r in trace["reasoning"] if "uncertain" in r]
    assert rounds and all("notes" in r for r in rounds)
    assert all(r["sub_query"] in trace["sub_queries"] for r in rounds if r["uncertain"])
    assert trace["llm_provider"] == "offline" and trace["answer"]
    assert set(trace["answer_cited"]) <= {e.chunk_id for s in result.steps for e in s}
    assert {"encode", "graph", "llm", "total"} <= set(result.timings_ms)
    assert json.dumps(result.to_json())  # JSON-serialisable for results.jsonl
    again = loop.retrieve(QUESTION, 10)  # deterministic offline
    assert [e.chunk_id for e in again] == [e.chunk_id for e in result]
    for name in ("chipmind", "chipmind_no_adaptive_k", "chipmind_no_filter", "chipmind_no_iteration"):
        r = make_retriever(name, snapshot, llm=None)
        got = r.retrieve(QUESTION, 5)
        assert r.name == name and isinstance(got, Retrieval) and 0 < len(got) <= 5


def test_max_iterations_bounds_the_loop(tiny) -> None:  # type: ignore[no-untyped-def]
    from edaqa_pipeline.methods.chipmind.retriever import make_chipmind
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

    _, _, storage = tiny
    snapshot = IndexSnapshot.load(storage)
    question = ("How do I set the routing alpha of one net? Then how do I place a pin on a layer? "
                "Also how do I show the heat map? And then what is the dropout voltage of the LDO?")
    for limit in (1, 2):
        got = make_chipmind(snapshot, "bounded", k0=1, tau=1.0, max_iterations=limit).retrieve(question, 10)
        assert len(got.steps) <= 1 + limit
        assert got.trace["stop_reason"] in ("max_iterations", "sufficient")


def test_edaqa_reads_the_chipkg_when_it_is_built(tiny, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The default method adds the ChipKG's PPR passage ranking (the one ChipMind's step
    starts from) as a chunk path when the storage root has a usable ChipKG, on the base-space
    question vector the element path encoded; without one (no tables, or nodes embedded by
    another encoder) it runs without the path, and an empty ChipKG ranks nothing."""
    from edaqa_pipeline.graphs.chipkg.passages import PassageRanker, PPRSeeds, usable_ranker
    from edaqa_pipeline.methods.chipmind.retriever import make_chipmind
    from edaqa_pipeline.methods.edaqa.recall import chipkg_path
    from edaqa_pipeline.registry import make_retriever
    from edaqa_pipeline.retrieval.encoders import query_vector
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

    _, _, storage = tiny
    snapshot = IndexSnapshot.load(storage)
    edaqa = make_retriever("edaqa", snapshot)
    query_vector.cache_clear()
    result = edaqa.retrieve(QUESTION, 10)
    # one encoding per space (here no trained encoder: the base space only), the ChipKG path's included
    assert query_vector.cache_info().misses == 1 + edaqa.trained and not edaqa.trained
    ranker = edaqa.chipkg
    assert isinstance(ranker, PassageRanker)
    cfg = edaqa.config
    path = chipkg_path(ranker, query_vector(snapshot.base, QUESTION), QUESTION, cfg.chipkg_passages)
    assert path and result.trace["paths"]["chipkg"] == len(path) <= cfg.chipkg_passages
    assert [s for _, s in path] == sorted((s for _, s in path), reverse=True)
    # ChipMind ranks with the same shared ranking: its step's scores are these, normalised
    search = make_chipmind(snapshot, "step", iterate=False).search
    ranked = search.rank(query_vector(snapshot.base, QUESTION), QUESTION, cfg.chipkg_passages)
    assert [(ranker.chunk_row(n), s) for n, s in ranked] == path
    assert "chipkg" in result.timings_ms
    assert "chipkg" not in make_retriever("edaqa_no_chipkg", snapshot).retrieve(QUESTION, 10).trace["paths"]

    # an empty graph ranks nothing (no error)
    empty = PassageRanker(snapshot, type(ranker.graph).build(ranker.graph.nodes.clear(), pl.read_parquet(
        storage / "tables" / f"{TRIPLES_TABLE}.parquet").clear(), snapshot.dim))
    assert empty.rank(query_vector(snapshot.base, QUESTION), QUESTION, 8, PPRSeeds()) == []

    stale = tmp_path / "stale"
    shutil.copytree(storage, stale, ignore=shutil.ignore_patterns("dagster_home"))
    nodes = pl.read_parquet(stale / "tables" / f"{NODES_TABLE}.parquet")
    nodes.with_columns(pl.when(pl.col("encoder_id").is_not_null()).then(pl.lit("another-encoder"))
                       .otherwise(None).alias("encoder_id")).write_parquet(stale / "tables" / f"{NODES_TABLE}.parquet")
    assert usable_ranker(IndexSnapshot.load(stale)) is None
    for table in (NODES_TABLE, TRIPLES_TABLE):
        (stale / "tables" / f"{table}.parquet").unlink()
    bare = IndexSnapshot.load(stale)
    assert usable_ranker(bare) is None
    without = make_retriever("edaqa", bare).retrieve(QUESTION, 10)
    assert "chipkg" not in without.trace["paths"] and len(without) > 0
