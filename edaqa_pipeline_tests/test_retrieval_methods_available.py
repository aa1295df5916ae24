"""``available_methods``: which methods an eval can compare, from the tables a build made."""

from pathlib import Path

import polars as pl

from edaqa_pipeline.methods.baselines import METHODS, OPTIONAL_TABLES, available_methods

CORE = ["bm25", "dense", "hybrid_rrf", "fa_units", "fa_hybrid"]


def test_core_methods_only_until_optional_tables_have_rows(tmp_path: Path) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    assert available_methods(tmp_path) == CORE
    pl.DataFrame({"node_id": []}, schema={"node_id": pl.String()}).write_parquet(tables / "chip_kg_nodes.parquet")
    assert available_methods(tmp_path) == CORE  # an empty graph answers nothing
    pl.DataFrame({"node_id": ["n1"]}).write_parquet(tables / "chip_kg_nodes.parquet")
    pl.DataFrame({"id": ["t1"]}).write_parquet(tables / "tuned_embeddings.parquet")
    got = available_methods(tmp_path)
    chipmind = [m for m in METHODS if m.startswith("chipmind")]
    assert got == [m for m in METHODS if m in {*CORE, "fa_hybrid_tuned", *chipmind}]
    assert len(chipmind) == 4 and "techdoc" not in got and "hwkg" not in got
    # an element graph without cross-document edges still serves techdoc; an empty hardware
    # KG (no PDF in the corpus) does not serve hwkg
    pl.DataFrame({"edge_id": []}, schema={"edge_id": pl.String()}).write_parquet(tables / "element_graph.parquet")
    pl.DataFrame({"kg_id": []}, schema={"kg_id": pl.String()}).write_parquet(tables / "hardware_kgs.parquet")
    got = available_methods(tmp_path)
    assert "techdoc" in got and "hwkg" not in got


def test_every_method_is_core_or_names_its_table() -> None:
    assert set(METHODS) == set(CORE) | set(OPTIONAL_TABLES)
