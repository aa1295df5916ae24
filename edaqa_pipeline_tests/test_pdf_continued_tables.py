"""Tables that a page break cut: the rows on the next page go on under the header of the page
before, whether the header stayed with the first rows or was left alone at the page end; a
ruled running footer is never taken for a header; the datasheet chunk keeps the header."""

from __future__ import annotations

import json

import pymupdf

from edaqa_pipeline.extraction.datasheets.chunks import datasheet_chunks
from edaqa_pipeline.parsing.pdf import parse_pdf
from edaqa_pipeline.text.markup import pipe_table_rows

HEADER = ["Pin", "Type", "Description"]
WIDTHS = (150, 100, 200)


def _grid(page: pymupdf.Page, y: float, rows: list[list[str]]) -> None:
    """Ruled rows of three cells from ``y`` down, 16 pt each."""
    for row in rows:
        x = 60.0
        for cell, width in zip(row, WIDTHS, strict=True):
            page.draw_rect(pymupdf.Rect(x, y, x + width, y + 16), color=(0, 0, 0), width=0.8)
            page.insert_text((x + 3, y + 12), cell, fontsize=9)
            x += width
        y += 16


def _tables(data: bytes) -> list[dict]:
    _, blocks = parse_pdf(data, "pins.pdf")
    return [b for b in blocks if b["kind"] == "table"]


def test_a_ruled_running_footer_is_no_header() -> None:
    doc = pymupdf.open()
    for number in range(3):
        page = doc.new_page(width=595, height=842)
        if number == 0:
            page.insert_text((60, 60), "Pin descriptions", fontsize=16)
            _grid(page, 110, [HEADER] + [[f"P{i}", "I", f"Input number {i}"] for i in range(38)])
        else:
            _grid(page, 60, [[f"Q{number}{i}", "O", f"Output number {i}"] for i in range(40)])
        _grid(page, 790, [["ACME Corp.", "DS-1234 Rev B", f"Page {number + 1} of 3"]])
    tables = _tables(doc.tobytes())
    assert [t["page"] for t in tables] == [1, 2, 3]
    for table in tables:
        assert pipe_table_rows(table["text"])[0] == HEADER
        assert "ACME" not in table["text"]
    assert [json.loads(t["meta"]).get("continued") for t in tables] == [None, 1, 2]


def test_a_header_row_left_at_the_page_end_heads_the_rows_on_the_next_page() -> None:
    doc = pymupdf.open()
    first = doc.new_page(width=595, height=842)
    first.insert_text((60, 60), "Pin descriptions", fontsize=16)
    for k in range(40):
        first.insert_text((60, 90 + 17 * k), f"Paragraph line {k} of prose that fills the page.", fontsize=10)
    _grid(first, 790, [HEADER])  # the header row alone at the bottom
    second = doc.new_page(width=595, height=842)
    _grid(second, 60, [[f"RST{i}", "I", f"Reset input number {i}, active low"] for i in range(20)])
    _, blocks = parse_pdf(doc.tobytes(), "pins.pdf")
    (table,) = [b for b in blocks if b["kind"] == "table"]
    assert table["page"] == 2 and json.loads(table["meta"])["continued"] == 1
    assert pipe_table_rows(table["text"])[:2] == [HEADER, ["RST0", "I", "Reset input number 0, active low"]]
    prose = " ".join(b["text"] for b in blocks if b["kind"] != "table")
    assert "Description" not in prose  # the header's words left the prose
    # the datasheet chunk keeps the header the parser carried (no table before it to inherit from)
    (chunk,) = [c for c in datasheet_chunks(blocks) if c["kind"] == "table"]
    assert chunk["text"].split("\n")[1:3] == ["| Pin | Type | Description |", "|---|---|---|"]


def test_a_long_table_excerpt_keeps_its_header_and_rows_as_a_table() -> None:
    """The ``hwkg`` evidence of a long table chunk: its title, header and delimiter row, then
    the rows that hold the property, which the parser's line kinds read as table rows."""
    from edaqa_pipeline.extraction.datasheets.tables import TableView, render_table
    from edaqa_pipeline.methods.hwkg.evidence import excerpt
    from edaqa_pipeline.parsing.lines import markdown_line_kinds

    view = TableView(labels=["Parameter", "Min", "Max", "Unit"], header_rows=1, title="Table 3. Supplies",
                     rows=[[f"Supply voltage {i}", f"{1 + i / 100:.2f}", f"{2 + i / 100:.2f}", "V"] for i in range(60)])
    text = excerpt(render_table(view), [{"name": "Supply voltage 7", "value_min": "1.07", "value_max": "2.07"}])
    lines = text.split("\n")
    assert lines[:3] == ["Table: Table 3. Supplies", "| Parameter | Min | Max | Unit |", "|---|---|---|---|"]
    assert "| Supply voltage 7 | 1.07 | 2.07 | V |" in lines
    assert markdown_line_kinds(text)[1:4] == ["table_header", "table_rule", "table_row"]


def test_a_header_cell_with_no_rule_under_it_keeps_its_values_out() -> None:
    """The header's value cells drawn as one box with the first row's values (no rule between
    them, as in the IHP process specification): the values belong to the first row, the
    header keeps the column names."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((60, 60), "MIM capacitor", fontsize=16)
    for x, width, name in ((60, 150, "Parameter"), (210, 60, "Unit")):
        page.draw_rect(pymupdf.Rect(x, 100, x + width, 116), color=(0, 0, 0), width=0.8)
        page.insert_text((x + 3, 112), name, fontsize=9)
    page.draw_rect(pymupdf.Rect(60, 116, 210, 132), color=(0, 0, 0), width=0.8)
    page.insert_text((63, 128), "Area capacitance", fontsize=9)
    page.draw_rect(pymupdf.Rect(210, 116, 270, 132), color=(0, 0, 0), width=0.8)
    page.insert_text((213, 128), "fF/um2", fontsize=9)
    for x, name, value in ((270, "Min", "1.35"), (330, "Max", "1.65")):
        page.draw_rect(pymupdf.Rect(x, 100, x + 60, 132), color=(0, 0, 0), width=0.8)
        page.insert_text((x + 3, 112), name, fontsize=9)
        page.insert_text((x + 3, 128), value, fontsize=9)
    _grid_row = [("Breakdown voltage", 150), ("V", 60), ("15", 60), ("", 60)]
    x = 60.0
    for cell, width in _grid_row:
        page.draw_rect(pymupdf.Rect(x, 132, x + width, 148), color=(0, 0, 0), width=0.8)
        if cell:
            page.insert_text((x + 3, 144), cell, fontsize=9)
        x += width
    (table,) = _tables(doc.tobytes())
    assert pipe_table_rows(table["text"]) == [
        ["Parameter", "Unit", "Min", "Max"],
        ["Area capacitance", "fF/um2", "1.35", "1.65"],
        ["Breakdown voltage", "V", "15", ""],
    ]
