"""TechDocRAG element graph: every edge rule on hand-written Markdown, the identifier views,
the intent rules, the grounding metrics, the assets (``materialize`` on an ephemeral
instance), retrieval end to end on a tiny index, and the graph checks on both OpenROAD corpora
indexed together."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from edaqa_pipeline.evaluation import corruption
from edaqa_pipeline.evaluation import element_metrics as metrics
from edaqa_pipeline.graphs.elements import graph, summaries
from edaqa_pipeline.graphs.elements import intent as query
from edaqa_pipeline.methods.techdoc.provenance import claim_provenance
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.parsing.markdown import parse_markdown
from edaqa_pipeline.text import identifiers
from edaqa_pipeline.text import tokens as text_tokens

SHARED = Path(__file__).resolve().parents[2] / "shared"

PLACER = """\
# Placer

The placer puts standard cells into rows. See Section 2.1 for the command and Table 1 for
its options.

## 1 Overview

Placement runs after floorplanning.

## 2 Commands

### 2.1 Place Cells

The `place_cells` command places standard cells. The `-density` option of `place_cells`
sets the target density.

```tcl
place_cells
    [-density value]
    [-timing_driven]
```

#### Options

Table 1: Options of place_cells.

| Switch Name | Description |
| ----- | ----- |
| `-density` | Target density between 0.1 and 1.0. Default 0.7. |
| `-timing_driven` | Enable timing-driven mode. |

![Density map](./images/density.png)

*Figure 1: Cell density after placement.*

Figure 1 shows the density hot spots near the macros.

### 2.2 Legalize

To legalize a placement:

1. Run `place_cells -density 0.6` first.
2. Run `check_placement` to verify the rows.

```tcl
check_placement -verbose
```

3. Write the result with `write_def out.def`.

> **Warning:** legalization fails with error PLC-0042 when rows are missing.

See [the commands](#2-commands) above.
"""

ROUTER = """\
# Router

The router connects pins. Before routing, run `place_cells` as described in the
[placer manual](placer.md#21-place-cells).

## Route

The `route_design` command routes all nets. Set `ROUTE_LAYERS` to restrict the layers.

| Variable | Description |
|---|---|
| `ROUTE_LAYERS` | Metal layers used by the router, for example met1-met5. |
"""


def doc_rows(text: str, name: str = "placer.md") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    _, blocks = parse_markdown(text.encode(), name)
    return graph.build_document(blocks)


def find(rows: list[dict[str, Any]], etype: str, contains: str = "") -> dict[str, Any]:
    hits = [r for r in rows if r["element_type"] == etype and contains in r["raw"]]
    assert hits, (etype, contains)
    return hits[0]


def has_edge(edges: list[dict[str, Any]], src: dict[str, Any], dst: dict[str, Any], relation: str, rule: str = "") -> bool:
    return any(e["src"] == src["element_id"] and e["dst"] == dst["element_id"] and e["relation"] == relation
               and (not rule or e["rule"] == rule) for e in edges)


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
                "bbox": [0.0, 0.0, 10.0, 10.0], "meta": meta}
    blocks = [
        block(0, "heading", "3 Electrical", level=1),
        block(1, "paragraph", "The limits are in Table 2 and the pinout in Figure 5."),
        block(2, "table", "Parameter,Min,Max\nVDD,1.62,1.98", '{"caption": "Table 2: Limits", "header": ["Parameter", "Min", "Max"], "n_rows": 1}'),
        block(3, "figure", "Figure 5: Pinout", '{"caption": "Figure 5: Pinout", "source": "image"}'),
    ]
    rows, edges = graph.build_document(blocks)
    assert find(rows, "clause")["label"] == "section:3"
    table, figure = find(rows, "table"), find(rows, "figure")
    assert (table["label"], figure["label"]) == ("table:2", "figure:5")
    para = find(rows, "paragraph")
    assert has_edge(edges, para, table, "table_ref") and has_edge(edges, para, figure, "figure_ref")
    assert has_edge(edges, find(rows, "caption", "Table 2"), table, "caption_of", "caption_of.pdf_meta")
    assert find(rows, "table_row")["raw"] == "VDD,1.62,1.98"
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


# --- views, intents ---------------------------------------------------------------------------


def test_canonicalisation() -> None:
    assert identifiers.canonical("`GRT-243`") == "GRT-0243"
    assert identifiers.canonical("--Max_Length") == "-max_length"
    assert identifiers.canonical("CORE_UTILIZATION") == "CORE_UTILIZATION"
    assert identifiers.canonical("./results/Floorplan.def") == "floorplan.def"
    assert identifiers.canonical("dbBlock::getName") == "dbblock::getname"
    assert identifiers.canonical_label("Fig.", "3-2") == "figure:3.2"
    ids = identifiers.extract_identifiers(
        "Run `global_route -verbose`; see GRT-0243, $::env(CORE_UTILIZATION) and results/route.guide.")
    assert {"global_route", "global_route -verbose", "GRT-0243", "CORE_UTILIZATION", "route.guide"} <= set(ids)
    code = identifiers.extract_identifiers("place_pin \\\n    -pin_name pin_name\n    -layer layer", code=True)
    assert "place_pin -layer" in code and "pin_name" not in code  # placeholders are not commands
    assert "my_design" not in identifiers.extract_identifiers("Use my_design here.")


def test_query_identifiers_and_fuzzy_matching() -> None:
    q = identifiers.query_identifiers("What does -max_length of global_route do? grt-243, see Table 3")
    assert {"global_route", "-max_length", "global_route -max_length", "GRT-0243", "table:3"} <= set(q)
    vocab = identifiers.IdentifierVocabulary(["set_routing_alpha", "-max_length", "CORE_UTILIZATION"])
    got = vocab.match(["set_rout1ng_alpha", "-max_lenght", "core_utilization", "unrelated_thing"])
    assert got["CORE_UTILIZATION"] == 1.0
    assert 0.8 <= got["set_routing_alpha"] < 1.0 and 0.8 <= got["-max_length"] < 1.0
    assert "unrelated_thing" not in got


def test_quoted_words_are_names_only_where_the_index_knows_them() -> None:
    from edaqa_pipeline.methods.edaqa.index import ChunkIdentifierIndex

    q = "When I run the `restructure` command with `layer` set, and `set_wire_rc` or `int`?"
    # snake_case is a command by the rules already; `int` is a language word
    assert identifiers.quoted_words(q) == ["restructure", "layer"]
    assert "restructure" not in identifiers.query_identifiers(q)
    records = [{"text": "Run it:\n```tcl\nrestructure -liberty_file lib.lib\n```"},
               {"text": "Set the `layer` of the wire with `set_wire_rc`."}]
    index = ChunkIdentifierIndex.build(records, [("a.md", ("Restructure",)), ("b.md", ("RC",))])
    known = index.vocabulary.known_words(identifiers.quoted_words(q))
    assert known == ["restructure"]  # a code line's command; `layer` is a value in b.md
    assert set(index.scores(known)) == {0}
    assert index.vocabulary.known_words(["restructur"]) == []  # exact, never fuzzy


def test_tokens_summary_and_corruption() -> None:
    assert {"max_length", "max", "length"} <= set(text_tokens.tokens("the -max_length option"))
    summary = summaries.offline_summary("paragraph", ["Placer", "Commands"],
                                    "The `place_cells` command places cells. More text.", ["place_cells"])
    assert summary == "Placer > Commands (paragraph). The place_cells command places cells. Identifiers: place_cells"
    text = "use set_routing_alpha with -net and CORE_UTILIZATION; see Table 3"
    assert corruption.corrupt_text(text, 0.0, random.Random(1)) == text
    bad = corruption.corrupt_text(text, 1.0, random.Random(1))
    assert bad != text and "set_routing_alpha" not in bad
    assert corruption.corrupt_text(text, 1.0, random.Random(1)) == bad  # seeded


@pytest.mark.parametrize(("question", "intent"), [
    ("What changed for -density in the latest release?", "version"),
    ("In Section 5.2, what does Table 7 clarify?", "cross_reference"),
    ("What does Figure 3 indicate about the connector layout?", "text_figure"),
    ("Which density range is allowed for place_cells?", "text_table"),
    ("How do I recalibrate the sensor?", "procedure"),
    ("Why does GRT-0243 appear?", "procedure"),
    ("What does parameter X mean in Section 4.2?", "definition"),
    ("place_cells density", "default"),
])
def test_intent_rules(question: str, intent: str) -> None:
    analysis = query.analyze(question)
    assert analysis.intent == intent
    assert analysis.policy is query.POLICIES[intent]
    assert analysis.policy.max_hops == (1 if intent in ("version", "default") else 2)


def test_policies_follow_table_1() -> None:
    p = query.POLICIES
    assert p["definition"].relations == {"contains", "same_identifier", "clause_ref"}
    assert p["procedure"].relations == {"step_next", "contains", "same_section"}
    assert p["text_table"].relations == {"table_ref", "caption_of", "same_identifier"}
    assert p["text_figure"].relations == {"figure_ref", "caption_of", "same_section"}
    assert p["cross_reference"].relations == {"clause_ref", "table_ref", "figure_ref"}
    assert p["version"].relations == {"version_of", "supersedes", "same_identifier"}
    assert all(set(x.relations) <= set(graph.RELATIONS) for x in p.values())


# --- metrics ----------------------------------------------------------------------------------


def test_metric_functions() -> None:
    adjacency = {0: [1], 1: [0, 2], 2: [1, 3], 3: [2]}
    assert metrics.rehr({2}, {2}, adjacency, 0) == 1.0
    assert metrics.rehr({0}, {2}, adjacency, 1) == 0.0
    assert metrics.rehr({0}, {2}, adjacency, 2) == 1.0
    assert metrics.rehr(set(), set(), adjacency) is None
    assert metrics.rehr_levels({0}, {3}, adjacency) == {
        "rehr@10_L0": 0.0, "rehr@10_L1": 0.0, "rehr@10_L2": 0.0, "rehr@10_L3": 1.0, "rehr@10_L4": 1.0}
    assert metrics.ecr({0, 1}, [(0, 1), (1, 2)]) == 0.5
    assert metrics.ecr({0}, []) is None
    assert metrics.span_gold_edges({1, 2}, [(0, 1), (2, 1), (1, 2)]) == [(1, 2)]
    assert metrics.poa([5, 7, 6], [5, 6, 7]) == 0.5  # (5,6) in order, (6,7) reversed
    assert metrics.poa([1], [1]) is None
    assert metrics.csr([True, False, True, True]) == 0.75


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


def test_claim_provenance() -> None:
    text = "The `-density` option of `place_cells` sets the target density."
    ev = [EvidenceItem("", "placer.md", text, 1.0, "techdoc:recall", 1, 2, element_ids=("el_a", "el_b"))]
    claims = claim_provenance("The -density option of place_cells sets the target density. Bananas are yellow.", ev)
    assert [c.supported for c in claims] == [True, False]
    assert claims[0].evidence_ids == (ev[0].evidence_id,)  # the item, without element texts
    per_element = claim_provenance("place_cells sets the target density.", ev,
                                   {"el_a": "The `place_cells` command sets the target density.", "el_b": "Other."})
    assert per_element[0].evidence_ids == ("el_a",)
    chunk = EvidenceItem("ch_1", "placer.md", text, 1.0, "bm25", 1, 2)  # chunk evidence: its own id
    assert claim_provenance("place_cells sets the target density.", [chunk])[0].evidence_ids == (chunk.evidence_id,)


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
