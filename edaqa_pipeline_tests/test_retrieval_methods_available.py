"""``available_methods``: which methods an eval can compare, from the tables a build made."""

from pathlib import Path

import polars as pl

from edaqa_pipeline.registry import METHOD_NAMES, METHODS, available_methods, method_tables

CORE = [m.name for m in METHODS if not m.tables]


def test_core_methods_only_until_optional_tables_have_rows(tmp_path: Path) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    assert available_methods(tmp_path) == CORE
    assert {"edaqa", "bm25", "dense", "hybrid_rrf", "fa_units", "fa_hybrid"} <= set(CORE)
    pl.DataFrame({"node_id": []}, schema={"node_id": pl.String()}).write_parquet(tables / "chip_kg_nodes.parquet")
    assert available_methods(tmp_path) == CORE  # an empty graph answers nothing
    pl.DataFrame({"node_id": ["n1"]}).write_parquet(tables / "chip_kg_nodes.parquet")
    pl.DataFrame({"id": ["t1"]}).write_parquet(tables / "tuned_embeddings.parquet")
    got = available_methods(tmp_path)
    chipmind = [m for m in METHOD_NAMES if m.startswith("chipmind")]
    assert got == [m for m in METHOD_NAMES if m in {*CORE, "fa_hybrid_tuned", *chipmind}]
    assert len(chipmind) == 4 and "techdoc" not in got and "hwkg" not in got
    # an element graph without cross-document edges still serves techdoc; an empty hardware
    # KG (no PDF in the corpus) does not serve hwkg
    pl.DataFrame({"edge_id": []}, schema={"edge_id": pl.String()}).write_parquet(tables / "element_graph.parquet")
    pl.DataFrame({"kg_id": []}, schema={"kg_id": pl.String()}).write_parquet(tables / "hardware_kgs.parquet")
    got = available_methods(tmp_path)
    assert "techdoc" in got and "hwkg" not in got


def test_every_optional_method_names_its_tables_and_the_eval_depends_on_them() -> None:
    from edaqa_pipeline.definitions import build_definitions

    optional = {m.name for m in METHODS if m.tables}
    assert set(METHOD_NAMES) == set(CORE) | optional
    assert len(set(METHOD_NAMES)) == len(METHOD_NAMES)
    defs = build_definitions()
    graph = defs.resolve_asset_graph()
    evaluation = next(k for k in graph.get_all_asset_keys() if k.path[-1] == "eval_reports")
    deps = {key.path[-1] for key in graph.get(evaluation).parent_keys}
    assert set(method_tables()) <= deps, set(method_tables()) - deps


def test_readme_method_table_is_the_registry() -> None:
    from edaqa_pipeline.registry import DEFAULT_METHOD, method_table_markdown

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    table = readme.split("<!-- methods:start -->\n", 1)[1].split("\n<!-- methods:end -->", 1)[0]
    assert table == method_table_markdown()
    assert f"`{DEFAULT_METHOD}` (default)" in table


def test_cli_method_choices_and_default_come_from_the_registry() -> None:
    from edaqa_pipeline.cli import build_parser
    from edaqa_pipeline.registry import DEFAULT_METHOD

    parser = build_parser()
    ask = parser.parse_args(["ask", "q", "--storage", "s"])
    assert ask.method == DEFAULT_METHOD
    for name in METHOD_NAMES:
        assert parser.parse_args(["ask", "q", "--storage", "s", "--method", name]).method == name
