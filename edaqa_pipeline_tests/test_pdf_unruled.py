"""Unruled tables (``parsing.pdf_unruled``): a specification table set without ruling lines
becomes one pipe-table block, while prose, two-column text and the four real datasheets (whose
tables are all ruled) gain no table. The PDFs are generated with pymupdf; the real ones are
read from ``../shared/corpus/datasheets`` when present."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from edaqa_pipeline.parsing.pdf import parse_pdf
from edaqa_pipeline.text.markup import pipe_table_rows

DATASHEETS = Path(__file__).resolve().parents[2] / "shared/corpus/datasheets"
HEADER = ["Parameter", "Symbol", "Min", "Typ", "Max", "Unit"]
ROWS = [
    ["Supply voltage", "VDD", "1.71", "1.80", "1.89", "V"],
    ["Supply current", "IDD", "", "2.5", "3.1", "mA"],
    ["Input high voltage", "VIH", "1.26", "", "", "V"],
    ["Clock frequency", "fCLK", "", "", "10", "MHz"],
]
XS = [72, 190, 250, 300, 350, 400]
PROSE = ("The Nimbus sensor measures temperature with a resolution of 0.01 degrees and reports it "
         "over SPI. It needs no calibration after assembly and starts in standby mode.")


def _unruled_sheet() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Nimbus Sensor", fontsize=18, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 90, 520, 150), PROSE, fontsize=10, fontname="helv")
    page.insert_text((72, 180), "Table 1. Electrical characteristics", fontsize=10, fontname="hebo")
    for r, row in enumerate([HEADER, *ROWS]):
        for x, cell in zip(XS, row, strict=True):
            if cell:
                page.insert_text((x, 200 + 16 * r), cell, fontsize=9,
                                 fontname="hebo" if r == 0 else "helv")
    # two columns of prose words: aligned, but not numbers -> not a table
    for r in range(4):
        page.insert_text((72, 320 + 14 * r), "left column text line here", fontsize=9, fontname="helv")
        page.insert_text((320, 320 + 14 * r), "right column words continue", fontsize=9, fontname="helv")
    return doc.tobytes()


def test_unruled_spec_table_is_one_pipe_table_block() -> None:
    _, blocks = parse_pdf(_unruled_sheet(), "nimbus.pdf")
    tables = [b for b in blocks if b["kind"] == "table"]
    assert len(tables) == 1
    table = tables[0]
    assert pipe_table_rows(table["text"]) == [HEADER, *ROWS]
    assert table["text"].split("\n")[1] == "|---" * len(HEADER) + "|"
    meta = json.loads(table["meta"])
    assert meta["ruling"] == "none" and meta["caption"] == "Table 1. Electrical characteristics"
    assert meta["n_rows"] == len(ROWS)
    # the cells left the prose; the prose and the two text columns stayed prose
    prose = " ".join(b["text"] for b in blocks if b["kind"] != "table")
    assert "1.89" not in prose and "fCLK" not in prose
    assert "left column text line here" in prose and PROSE.split(".")[0] in prose


def test_prose_only_page_has_no_unruled_table() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(72, 72, 520, 700), (PROSE + " ") * 12, fontsize=10,
                        fontname="helv", align=pymupdf.TEXT_ALIGN_JUSTIFY)
    _, blocks = parse_pdf(doc.tobytes(), "prose.pdf")
    assert not [b for b in blocks if b["kind"] == "table"]


@pytest.mark.slow
def test_real_datasheets_gain_no_unruled_table() -> None:
    """Every table of the four corpus PDFs is ruled (SOURCES.md); the layout analysis must not
    invent tables in their diagrams, tables of contents, glossaries or two-column lists."""
    if not DATASHEETS.is_dir():
        pytest.skip(f"{DATASHEETS} not present")
    for path in sorted(DATASHEETS.glob("*.pdf")):
        _, blocks = parse_pdf(path.read_bytes(), path.name)
        unruled = [b["page"] for b in blocks if b["kind"] == "table" and "ruling" in b["meta"]]
        assert unruled == [], (path.name, unruled)
