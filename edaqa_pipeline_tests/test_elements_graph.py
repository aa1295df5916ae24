"""TechDocRAG element graph: every edge rule on hand-written Markdown, the graph checks, the
metrics' view of the graph, and the graph checks on both OpenROAD corpora indexed together."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from edaqa_pipeline.evaluation import element_metrics as metrics
from edaqa_pipeline.graphs.elements import graph
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.parsing.lines import pdf_line_kinds
from edaqa_pipeline.parsing.markdown import parse_markdown
from edaqa_pipeline.text.markup import pipe_table
from edaqa_pipeline_tests._helpers_elements import PLACER, ROUTER, doc_rows, find, has_edge

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="module")
def placer() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return doc_rows(PLACER)


# --- nodes ------------------------------------------------------------------------------------


def test_element_types_labels_and_provenance(placer) -> None:
    rows, edges = placer
    types = {r["element_type"] for r in rows}
    assert {"section", "clause", "paragraph", "table", "table_row", "figure", "caption", "step", "code"} <= types
    assert find(rows, "clause", "2.1 Place Cells")["label"] == "section:2.1"
    assert find(rows, "section", "# Placer")["label"] == ""
    assert find(rows, "table")["label"] == "table:1"
    assert find(rows, "figure")["label"] == "figure:1"
    lines = PLACER.split("\n")
    for row in rows:  # every node cites exact source lines
        assert row["start_line"] and row["end_line"] >= row["start_line"], row
        span = "\n".join(lines[row["start_line"] - 1 : row["end_line"]])
        assert row["raw"].strip() in span or all(ln in span for ln in row["raw"].split("\n")), row
    density = find(rows, "table_row", "-density")
    assert lines[density["start_line"] - 1] == density["raw"]
    assert density["header_raw"].startswith("| Switch Name | Description |")
    assert find(rows, "paragraph", "Warning")["note_label"] == "warning"
    frames = graph.frames(rows, edges)
    assert graph.graph_problems(*frames) == []


def test_structural_edges(placer) -> None:
    rows, edges = placer
    clause = find(rows, "clause", "2.1 Place Cells")
    options = find(rows, "section", "Options")
    table = find(rows, "table")
    row = find(rows, "table_row", "-density")
    code = find(rows, "code", "[-density value]")
    para = find(rows, "paragraph", "The `place_cells` command")
    assert has_edge(edges, clause, options, "contains", "contains.subsection")
    assert has_edge(edges, clause, para, "contains", "contains.section")
    assert has_edge(edges, table, row, "contains", "contains.row")
    assert has_edge(edges, para, code, "precedes", "precedes.reading_order")
    assert has_edge(edges, para, code, "same_section", "same_section.window")
    assert not has_edge(edges, clause, row, "contains")  # rows belong to their table


def test_step_next_within_and_across_interrupted_lists(placer) -> None:
    rows, edges = placer
    s1, s2, s3 = (find(rows, "step", f"{n}. ") for n in (1, 2, 3))
    assert has_edge(edges, s1, s2, "step_next", "step_next.list")
    assert has_edge(edges, s2, s3, "step_next", "step_next.continued")  # list broken by code
    assert not has_edge(edges, s1, s3, "step_next")
    nodes, edge_df = graph.frames(rows, edges)
    assert graph.step_chain_problems(nodes, edge_df) == []


def test_referential_edges(placer) -> None:
    rows, edges = placer
    intro = find(rows, "paragraph", "See Section 2.1")
    clause = find(rows, "clause", "2.1 Place Cells")
    table = find(rows, "table")
    figure = find(rows, "figure")
    caption_t = find(rows, "caption", "Table 1:")
    caption_f = find(rows, "caption", "Figure 1:")
    refers = find(rows, "paragraph", "Figure 1 shows")
    option_para = find(rows, "paragraph", "option of `place_cells`")
    row = find(rows, "table_row", "-density")
    link = find(rows, "paragraph", "See [the commands]")
    commands = find(rows, "clause", "2 Commands")
    assert has_edge(edges, intro, clause, "clause_ref", "clause_ref.label")
    assert has_edge(edges, intro, table, "table_ref", "table_ref.label")
    assert has_edge(edges, refers, figure, "figure_ref", "figure_ref.label")
    assert has_edge(edges, caption_t, table, "caption_of", "caption_of.before")
    assert has_edge(edges, caption_f, figure, "caption_of", "caption_of.after")
    assert has_edge(edges, option_para, row, "table_ref", "option_of_command")
    assert has_edge(edges, link, commands, "clause_ref", "markdown_link.anchor")
    assert not any(e["src"] == caption_f["element_id"] and e["relation"] == "figure_ref" for e in edges)


def test_table_ref_falls_back_to_ordinal_without_labels() -> None:
    text = "# T\n\nSee Table 2 for the limits.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n| c | d |\n|---|---|\n| 3 | 4 |\n"
    rows, edges = doc_rows(text, "t.md")
    second = [r for r in rows if r["element_type"] == "table"][1]
    assert has_edge(edges, find(rows, "paragraph", "Table 2"), second, "table_ref", "table_ref.ordinal")


def test_same_identifier_links_occurrences_to_the_definition(placer) -> None:
    rows, edges = placer
    code = find(rows, "code", "[-density value]")
    step = find(rows, "step", "1. Run")
    assert "place_cells" in code["identifiers"] and "place_cells" in step["identifiers"]
    assert has_edge(edges, step, code, "same_identifier", "same_identifier.definition")
    row = find(rows, "table_row", "-density")
    assert "place_cells -density" in row["identifiers"]
    assert has_edge(edges, code, row, "same_identifier")  # the options row defines the option


def test_corpus_edges_links_and_cross_document_identifiers() -> None:
    placer_rows, _ = doc_rows(PLACER, "placer.md")
    router_rows, _ = doc_rows(ROUTER, "router.md")
    cross, labels = graph.corpus_edges(placer_rows + router_rows)
    assert labels == {}
    link = find(router_rows, "paragraph", "placer manual")
    target = find(placer_rows, "clause", "2.1 Place Cells")
    assert has_edge(cross, link, target, "clause_ref", "markdown_link")
    assert any(e["relation"] == "same_identifier" and e["src_document"] == "router.md"
               and e["dst_document"] == "placer.md" for e in cross)
    nodes, edge_df = graph.frames(placer_rows + router_rows,
                                  graph.document_edges(placer_rows + router_rows) + cross)
    assert graph.graph_problems(nodes, edge_df) == []


def test_link_resolution_rules() -> None:
    docs = {"grt.md", "contrib_getting_involved.md", "openroad_overview.md", "SOURCE.md"}
    assert graph.resolve_link("a.md", "../contrib/GettingInvolved.md#how", docs, {}) == (
        "contrib_getting_involved.md", "how")
    assert graph.resolve_link("a.md", "../main/src/grt/README.md", docs, {}) == ("grt.md", "")
    table = "| file | original path |\n| --- | --- |\n| grt.md | `src/grt/README.md` |\n| openroad_overview.md | `README.md` |\n"
    rows, _ = doc_rows("# Source\n\n" + table, "SOURCE.md")
    smap = graph.source_path_map(rows)
    assert graph.resolve_link("grt.md", "../../README.md#tests", docs, smap) == ("openroad_overview.md", "tests")


def test_version_edges_between_two_corpus_roots() -> None:
    old_text = PLACER.replace("Default 0.7.", "Default 0.6.")
    rows_old, _ = doc_rows(old_text, "docs-2024/placer.md")
    rows_new, _ = doc_rows(PLACER, "docs/placer.md")
    rows_other, _ = doc_rows(ROUTER, "docs/router.md")
    cross, labels = graph.corpus_edges(rows_old + rows_new + rows_other)
    assert labels == {"docs-2024/placer.md": "docs-2024", "docs/placer.md": "docs", "docs/router.md": "docs"}
    new_row = find(rows_new, "table_row", "-density")
    old_row = find(rows_old, "table_row", "-density")
    assert has_edge(cross, new_row, old_row, "version_of")
    assert has_edge(cross, new_row, old_row, "supersedes", "supersedes.changed_text")
    same_new, same_old = find(rows_new, "code", "[-density"), find(rows_old, "code", "[-density")
    assert has_edge(cross, same_new, same_old, "version_of")
    assert not has_edge(cross, same_new, same_old, "supersedes")  # unchanged text
    assert graph.version_rank("openroad-2024") < graph.version_rank("openroad")


def test_pdf_blocks_figure_table_captions_and_pages() -> None:
    def block(ordinal: int, kind: str, text: str, meta: str = "{}", **kw: Any) -> dict[str, Any]:
        return {"block_id": f"b{ordinal}", "document": "ds.pdf", "ordinal": ordinal, "kind": kind,
                "section_path": ["3 Electrical"], "heading_level": kw.get("level", 0), "language": "",
                "text": text, "raw": text, "start_line": None, "end_line": None, "page": 4,
                "bbox": [0.0, 0.0, 10.0, 10.0], "meta": meta, "line_kinds": pdf_line_kinds(kind, text)}
    blocks = [
        block(0, "heading", "3 Electrical", level=1),
        block(1, "paragraph", "The limits are in Table 2 and the pinout in Figure 5."),
        block(2, "table", pipe_table([["Parameter", "Min", "Max"], ["VDD", "1.62", "1.98"]]), '{"caption": "Table 2: Limits", "header": ["Parameter", "Min", "Max"], "n_rows": 1}'),
        block(3, "figure", "Figure 5: Pinout", '{"caption": "Figure 5: Pinout", "source": "image"}'),
    ]
    rows, edges = graph.build_document(blocks)
    assert find(rows, "clause")["label"] == "section:3"
    table, figure = find(rows, "table"), find(rows, "figure")
    assert (table["label"], figure["label"]) == ("table:2", "figure:5")
    para = find(rows, "paragraph")
    assert has_edge(edges, para, table, "table_ref") and has_edge(edges, para, figure, "figure_ref")
    assert has_edge(edges, find(rows, "caption", "Table 2"), table, "caption_of", "caption_of.pdf_meta")
    assert find(rows, "table_row")["raw"] == "| VDD | 1.62 | 1.98 |"
    assert find(rows, "table")["header_raw"] == "| Parameter | Min | Max |\n|---|---|---|"
    assert all(r["page"] == 4 and r["start_line"] is None for r in rows)
    assert graph.graph_problems(*graph.frames(rows, edges)) == []


def test_checks_catch_dangling_edges_missing_provenance_and_branching_steps(placer) -> None:
    rows, edges = placer
    nodes, edge_df = graph.frames(rows, edges)
    steps = nodes.filter(pl.col("element_type") == "step")["element_id"].to_list()
    bad_edges = pl.concat([edge_df, graph.frames([], [
        graph.edge_row("el_missing", steps[0], "precedes", "x", "a", "a", "document"),
        graph.edge_row(steps[0], steps[2], "step_next", "x", "a", "a", "document"),
    ])[1]])
    assert any("dangling" in p for p in graph.dangling_edge_problems(nodes, bad_edges))
    assert any("several step_next" in p for p in graph.step_chain_problems(nodes, bad_edges))
    no_lines = nodes.with_columns(pl.lit(None, pl.Int64).alias("start_line"))
    assert graph.provenance_problems(no_lines)


# --- the metrics' view of the graph ---------------------------------------------------------


def test_graph_view_maps_evidence_to_nodes(placer) -> None:
    rows, edges = placer
    view = metrics.ElementGraphView(*graph.frames(rows, edges))
    row = find(rows, "table_row", "-density")
    item = EvidenceItem("x", "placer.md", row["raw"], 1.0, "t", row["start_line"], row["end_line"])
    nodes = view.item_nodes(item)
    assert [view.ids[i] for i in nodes] == [row["element_id"]]
    gold_spans = [("placer.md", row["start_line"], row["end_line"], None)]
    scores = view.scores([item], gold_spans=gold_spans)
    assert scores["rehr@10_L0"] == 1.0
    s1, s2 = find(rows, "step", "1. Run"), find(rows, "step", "2. Run")
    steps_item = EvidenceItem("y", "placer.md", "", 1.0, "t", s1["start_line"], s2["end_line"])
    procedure = view.scores([steps_item], gold_spans=[("placer.md", s1["start_line"], s2["end_line"], None)])
    assert procedure["poa"] == 1.0 and procedure["ecr"] == 1.0
    assert view.gold_from_passages([row["raw"] + "\n"], ["placer.md"]) == {view.ids.index(row["element_id"])}


# --- both OpenROAD corpora indexed together ---------------------------------------------------


@pytest.mark.skipif(not (SHARED / "corpus" / "openroad-2024").is_dir(), reason="shared corpora absent")
def test_graph_checks_on_both_openroad_corpora() -> None:
    blocks: dict[str, list[dict[str, Any]]] = {}
    for root in ("openroad", "openroad-2024"):
        for path in sorted((SHARED / "corpus" / root).glob("*.md")):
            key = f"{root}/{path.name}"
            blocks[key] = parse_markdown(path.read_bytes(), key)[1]
    rows, edges = graph.build_corpus(blocks)
    nodes, edge_df = graph.frames(rows, edges)
    assert graph.graph_problems(nodes, edge_df) == []
    relations = set(edge_df["relation"].to_list())
    assert {"contains", "precedes", "same_section", "step_next", "clause_ref", "table_ref",
            "caption_of", "same_identifier", "version_of", "supersedes"} <= relations
    versions = edge_df.filter(pl.col("relation") == "version_of")
    assert versions.height > 1000
    assert set(versions["src_document"].str.split("/").list.first().to_list()) == {"openroad"}
    assert set(nodes["version"].unique().to_list()) >= {"openroad", "openroad-2024"}
