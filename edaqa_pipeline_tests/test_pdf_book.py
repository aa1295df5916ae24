"""A manual as a book-length PDF ships: Markdown manuals rendered with real text layout
(``scripts/build_pdf_manuals.py``: pymupdf's Story, a bookmark per heading, tables broken at
page ends), indexed through Dagster, and a question answered from it: the table row reaches
evidence and the answer as a row under its header, and the citation names page and section."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import polars as pl
import pytest

from edaqa_pipeline.text.markup import pipe_table_rows
from edaqa_pipeline_tests.fixtures_index import REPO, copy_corpus
from edaqa_pipeline_tests.test_bad_inputs import index_with_defaults

pytestmark = pytest.mark.slow
QUESTION = "What is the default of -starts_with in define_power_grid?"
ROW = ("| -starts_with | Net of the first rail at the bottom of the core. Allowed values are POWER "
       "and GROUND. Default: GROUND. |")


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("pdf_book")
    manuals = copy_corpus(root / "manuals", ["cts.md", "pdn.md"])
    rendered = root / "rendered"
    subprocess.run([sys.executable, str(REPO / "scripts" / "build_pdf_manuals.py"),
                    "--corpus", str(manuals), "--out", str(rendered)], check=True, capture_output=True)
    storage = root / "storage"
    index_with_defaults(rendered / "book", storage)
    return storage


def test_a_table_broken_at_a_page_end_goes_on_under_its_header(book: Any) -> None:
    blocks = pl.read_parquet(book / "tables" / "parsed_documents" / "*.parquet")
    tables = [b for b in blocks.to_dicts() if b["kind"] == "table"]
    continued = [b for b in tables if ROW in b["text"]]
    assert len(continued) == 1
    table = continued[0]
    meta = json.loads(table["meta"])
    # the rows went on to the next page; the header stayed on the page before
    assert meta["continued"] == table["page"] - 1
    assert pipe_table_rows(table["text"])[0] == ["Switch Name", "Description"]
    assert table["line_kinds"][:3] == ["table_header", "table_rule", "table_row"]
    for other in tables:  # every table row of the book is a pipe row, none is CSV
        assert all((line.startswith("| ") and line.endswith(" |")) or set(line) <= set("|-")
                   for line in other["text"].split("\n"))


def test_the_answer_states_the_row_and_cites_page_and_section(book: Any) -> None:
    from edaqa_pipeline.service.core import EdaqaService

    record = EdaqaService.open(book).answer(QUESTION, "edaqa", 10)
    cited = [e for e in record["evidence"] if e["doc"] == "book.pdf" and ROW in e["text"]]
    assert cited, [e["text"][:200] for e in record["evidence"]]
    item = cited[0]
    assert "| Switch Name | Description |" in item["text"]  # the row under its header
    first = record["claims"][0]
    assert "GROUND" in first["text"] and "starts_with" in first["text"]
    assert "," not in first["text"].split("GROUND")[0].replace(", ", " ")  # not a CSV fragment
    assert f"book.pdf:p{item['page']}" in first["citations"]
    assert item["location"] == (f"book.pdf:p{item['page']}, Power Distribution Network > Commands > "
                                "define_power_grid > Options")




def test_a_row_found_by_the_element_graph_is_a_row(book: Any) -> None:
    """A table row an element bundle brings alone (a PDF page has no source lines to look its
    kinds up by) keeps the kind of a row, so the answer quotes it as ``option: description``,
    never as a sentence with the table's pipes in it."""
    from edaqa_pipeline.generation.extractive import units_of
    from edaqa_pipeline.graphs.elements.bundles import Bundle, Member, evidence_items
    from edaqa_pipeline.graphs.elements.index import load_index
    from edaqa_pipeline.retrieval.line_structure import line_kinds_of
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

    index = load_index(IndexSnapshot.load(book))
    row = next(i for i, (kind, raw) in enumerate(zip(index.type, index.raw, strict=True))
               if kind == "table_row" and raw.startswith("| -cluster_size |"))
    core = Member(row, "core", "recall")
    (item,) = evidence_items(index, Bundle(row, 1.0, "recall", [core]), [core], "elements")
    assert item.page is not None and line_kinds_of(item) == ("table_row",)
    (unit,) = units_of(item.text, "E1", 0, line_kinds_of(item))
    assert unit.text.startswith("-cluster_size: Maximum number of sinks in one cluster.")
    assert "|" not in unit.text and "Default: 20" in unit.text
