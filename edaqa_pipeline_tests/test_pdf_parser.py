"""PDF parser: exact table cells with intact decimals, headings, figures, running headers, the
refusals of unreadable input (each names the document and the problem), determinism, and the
real datasheets of the corpus (parsed once per module). Pure functions only, no Dagster."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from edaqa_pipeline.model import BLOCK_KINDS, BLOCKS_SCHEMA, DOCUMENTS_SCHEMA, frame
from edaqa_pipeline.parsing.errors import DocumentError
from edaqa_pipeline.parsing.pdf import parse_pdf
from edaqa_pipeline.text.markup import pipe_table_rows

DATASHEETS = Path(__file__).resolve().parents[2] / "shared/corpus/datasheets"

HEADER = ["Parameter", "Min", "Typ", "Max", "Unit"]
ROWS = [
    ["Output voltage", "1.75", "1.80", "1.85", "V"],
    ["Dropout voltage", "", "10.00", "25.50", "mV"],
    ["Quiescent current", "0.05", "0.10", "0.25", "mA"],
]
INTRO = (
    "The Nimbus LDO is a low-noise linear regulator for analog front ends. It delivers up to "
    "300 mA from a 2.5 V to 5.5 V input and is stable with ceramic output capacitors."
)
CAPTION = "Figure 1. Typical application circuit"


def _wrap(page: pymupdf.Page, x: float, y: float, text: str, size: float = 10) -> float:
    """Write ``text`` in lines of about 90 characters; returns the y after the last line."""
    line = ""
    for word in text.split():
        if len(line) + len(word) > 90:
            page.insert_text((x, y), line, fontsize=size, fontname="helv")
            y += size * 1.3
            line = ""
        line = f"{line} {word}".strip()
    page.insert_text((x, y), line, fontsize=size, fontname="helv")
    return y + size * 1.3


def _datasheet() -> bytes:
    doc = pymupdf.open()
    doc.set_metadata({"title": "Nimbus LDO Datasheet"})
    page = doc.new_page()  # 595 x 842 (A4)
    page.insert_text((72, 80), "Nimbus LDO Regulator", fontsize=20, fontname="hebo")
    y = _wrap(page, 72, 110, INTRO)
    page.insert_text((72, y + 20), "Electrical Characteristics", fontsize=14, fontname="hebo")
    page.insert_text(
        (72, y + 42), "Table 1. Electrical characteristics", fontsize=10, fontname="helv"
    )
    # a ruled table: every row and column boundary drawn
    xs = [72, 232, 292, 352, 412, 472]
    top = y + 50
    ys = [top + 20 * i for i in range(len(ROWS) + 2)]
    for x in xs:
        page.draw_line((x, ys[0]), (x, ys[-1]), width=0.8)
    for yy in ys:
        page.draw_line((xs[0], yy), (xs[-1], yy), width=0.8)
    for r, row in enumerate([HEADER, *ROWS]):
        for c, value in enumerate(row):
            font = "hebo" if r == 0 else "helv"
            page.insert_text((xs[c] + 4, ys[r] + 14), value, fontsize=9, fontname=font)
    # a raster picture with its caption below
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 30), False)
    pix.clear_with(180)
    image = pymupdf.Rect(72, ys[-1] + 40, 272, ys[-1] + 160)
    page.insert_image(image, pixmap=pix, keep_proportion=False)
    page.insert_text((72, image.y1 + 18), CAPTION, fontsize=9, fontname="helv")
    _wrap(page, 72, image.y1 + 50, "Place the input capacitor close to the VIN pin.")
    return doc.tobytes()


@pytest.fixture(scope="module")
def sheet() -> tuple[bytes, dict[str, Any], list[dict[str, Any]]]:
    data = _datasheet()
    doc, blocks = parse_pdf(data, "sheets/nimbus.pdf")
    return data, doc, blocks


def _only(blocks: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [b for b in blocks if b["kind"] == kind]
    assert len(found) == 1, [(b["kind"], b["text"]) for b in blocks]
    return found[0]


def test_table_is_one_pipe_table_block_with_intact_decimals(sheet: Any) -> None:
    """A PDF table is written as a Markdown pipe table (header, delimiter, rows), the shape a
    Markdown or HTML table has: each row is one line that reads with its header."""
    _, _, blocks = sheet
    table = _only(blocks, "table")
    assert table["text"] == (
        "| Parameter | Min | Typ | Max | Unit |\n"
        "|---|---|---|---|---|\n"
        "| Output voltage | 1.75 | 1.80 | 1.85 | V |\n"
        "| Dropout voltage |   | 10.00 | 25.50 | mV |\n"
        "| Quiescent current | 0.05 | 0.10 | 0.25 | mA |"
    )
    assert table["line_kinds"] == ["table_header", "table_rule", "table_row", "table_row", "table_row"]
    assert "10.00" in table["text"] and "1000" not in table["text"]  # extract() garbles this
    assert table["raw"] == table["text"]
    assert table["page"] == 1
    assert json.loads(table["meta"]) == {
        "caption": "Table 1. Electrical characteristics",
        "header": HEADER,
        "n_rows": 3,
    }
    x0, y0, x1, y1 = table["bbox"]
    assert (round(x0), round(x1)) == (72, 472) and y1 - y0 == pytest.approx(80, abs=1)
    assert table["section_path"] == ["Nimbus LDO Regulator", "Electrical Characteristics"]


def test_table_cells_match_to_markdown(sheet: Any) -> None:
    """The cells are what pymupdf's to_markdown() reads, without its Markdown styling (and
    without its guess that the caption line above is an external header row)."""
    data, _, blocks = sheet
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        page = doc[0]  # keep a reference: tables hold the page weakly
        markdown = page.find_tables(strategy="lines", use_layout=False)[0].to_markdown()
    md_rows = [
        [re.sub(r"\*\*|`|~~", "", cell).strip() for cell in line.strip("|").split("|")]
        for line in markdown.strip().splitlines()
        if not line.startswith("|---")
    ]
    rows = pipe_table_rows(_only(blocks, "table")["text"])
    assert md_rows[0] == ["Table 1. Electrical characteristics", "Col2", "Col3", "Col4", "Col5"]
    assert md_rows[1:] == rows


def test_headings_prose_and_document_row(sheet: Any) -> None:
    data, doc, blocks = sheet
    assert [(b["kind"], b["heading_level"], b["text"]) for b in blocks[:2]] == [
        ("heading", 1, "Nimbus LDO Regulator"),
        ("paragraph", 0, INTRO),
    ]
    headings = [(b["text"], b["heading_level"]) for b in blocks if b["kind"] == "heading"]
    assert headings == [("Nimbus LDO Regulator", 1), ("Electrical Characteristics", 2)]
    assert blocks[1]["section_path"] == ["Nimbus LDO Regulator"]
    assert doc == {
        "document": "sheets/nimbus.pdf",
        "format": "pdf",
        "source_sha256": doc["source_sha256"],
        "n_bytes": len(data),
        "n_lines": 0,
        "n_pages": 1,
        "title": "Nimbus LDO Datasheet",
        "failed_pages": "[]",
    }
    assert len(doc["source_sha256"]) == 64
    assert set(doc) == set(DOCUMENTS_SCHEMA)
    for block in blocks:
        assert set(block) == set(BLOCKS_SCHEMA)
        assert block["kind"] in BLOCK_KINDS
        assert block["start_line"] is None and block["end_line"] is None and block["language"] == ""
        assert isinstance(json.loads(block["meta"]), dict)
    assert [b["ordinal"] for b in blocks] == list(range(len(blocks)))
    assert len({b["block_id"] for b in blocks}) == len(blocks)
    assert frame(blocks, BLOCKS_SCHEMA).height == len(blocks)  # the rows fit the schema


def test_raster_image_is_a_figure_block_not_text(sheet: Any) -> None:
    _, _, blocks = sheet
    figure = _only(blocks, "figure")
    assert figure["text"] == CAPTION
    assert json.loads(figure["meta"]) == {"caption": CAPTION, "source": "image"}
    assert [round(v) for v in figure["bbox"]][0::2] == [72, 272]
    others = [b for b in blocks if b["kind"] != "figure"]
    assert all(CAPTION not in b["text"] for b in others)  # the caption is the figure's text
    fx0, fy0, fx1, fy1 = figure["bbox"]
    for b in others:  # no text block overlaps the picture
        x0, y0, x1, y1 = b["bbox"]
        assert x1 <= fx0 or x0 >= fx1 or y1 <= fy0 or y0 >= fy1, b["text"]
    assert blocks[-1]["text"] == "Place the input capacitor close to the VIN pin."
    kinds = [b["kind"] for b in blocks]
    assert kinds.index("table") < kinds.index("figure") < len(kinds) - 1  # reading order


def test_same_bytes_give_identical_rows(sheet: Any) -> None:
    data, doc, blocks = sheet
    assert parse_pdf(data, "sheets/nimbus.pdf") == (doc, blocks)
    _, other_blocks = parse_pdf(data, "other.pdf")
    assert {b["block_id"] for b in other_blocks}.isdisjoint(b["block_id"] for b in blocks)


def test_running_headers_footers_and_page_numbers_are_dropped() -> None:
    doc = pymupdf.open()
    for n in range(1, 5):
        page = doc.new_page()
        page.insert_text((72, 40), "Nimbus LDO Datasheet Rev. 1.2", fontsize=8, fontname="helv")
        page.insert_text((500, 810), f"Page {n} of 4", fontsize=8, fontname="helv")
        _wrap(page, 72, 100 + 20 * n, f"Body text of page {n} about the regulator.")
    _, blocks = parse_pdf(doc.tobytes(), "r.pdf")
    assert [(b["page"], b["text"]) for b in blocks] == [
        (n, f"Body text of page {n} about the regulator.") for n in range(1, 5)
    ]


# --- refusals ------------------------------------------------------------------------------


def _refused(data: bytes, name: str = "bad/sheet.pdf") -> DocumentError:
    with pytest.raises(DocumentError) as info:
        parse_pdf(data, name)
    assert info.value.document == name
    assert str(info.value).startswith(f"{name}: ")
    return info.value


def test_corrupt_pdf_is_refused() -> None:
    error = _refused(b"%PDF-1.7 garbage")
    assert error.problem.startswith("not a readable PDF: ")


def test_random_bytes_are_refused() -> None:
    error = _refused(random.Random(7).randbytes(4096))
    assert error.problem.startswith("not a readable PDF: ")


def test_empty_file_and_other_formats_are_refused() -> None:
    assert _refused(b"").problem == "not a readable PDF: the file is empty"
    assert _refused(b"<html><body>hi</body></html>").problem.startswith("not a readable PDF: ")


def test_pdf_without_pages_is_refused() -> None:
    empty = (
        b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
        b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
    )
    assert _refused(empty).problem == "not a readable PDF: it has no pages"


def test_encrypted_pdf_is_refused() -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret limits", fontname="helv")
    data = doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw="user")
    error = _refused(data)
    assert error.problem == "PDF is encrypted (password required); decrypt it first"


def test_owner_password_only_pdf_is_read() -> None:
    """No user password: viewers open it without asking, so do we."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "open limits", fontname="helv")
    data = doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw="")
    _, blocks = parse_pdf(data, "o.pdf")
    assert [b["text"] for b in blocks] == ["open limits"]


def test_pdf_without_text_layer_is_refused() -> None:
    doc = pymupdf.open()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 60, 80), False)
    pix.clear_with(200)
    doc.new_page().insert_image(pymupdf.Rect(0, 0, 595, 842), pixmap=pix)
    error = _refused(doc.tobytes())
    assert error.problem == "PDF has no text layer (scanned images?); OCR is not configured"


# --- the real datasheets of the corpus -----------------------------------------------------

REAL = [
    "ihp_sg13g2_io_typ_1p2V_3p3V_25C.pdf",
    "ihp_sg13g2_process_spec.pdf",
    "veer_eh1_prm.pdf",
    "wishbone_b3_spec.pdf",
]


@pytest.fixture(scope="module")
def real() -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    if not DATASHEETS.is_dir():
        pytest.skip(f"{DATASHEETS} not present")
    return {
        name: parse_pdf((DATASHEETS / name).read_bytes(), f"datasheets/{name}") for name in REAL
    }


@pytest.mark.parametrize("name", REAL)
def test_real_datasheet_parses(real: Any, name: str) -> None:
    doc, blocks = real[name]
    assert doc["format"] == "pdf" and doc["n_pages"] > 0 and doc["title"]
    assert sum(b["kind"] == "table" for b in blocks) > 0
    assert sum(b["kind"] == "heading" for b in blocks) > 0
    assert len({b["block_id"] for b in blocks}) == len(blocks)
    for block in blocks:
        assert 1 <= block["page"] <= doc["n_pages"]
        x0, y0, x1, y1 = block["bbox"]
        assert x0 <= x1 and y0 <= y1
        assert block["kind"] in BLOCK_KINDS
    for table in (b for b in blocks if b["kind"] == "table"):
        meta = json.loads(table["meta"])
        assert meta["n_rows"] >= 1 and len(meta["header"]) >= 2
        assert table["text"].count("\n") == meta["n_rows"] + 1  # header, delimiter, rows
        assert pipe_table_rows(table["text"])[0] == meta["header"]


def test_real_tables_keep_numbers_and_columns(real: Any) -> None:
    _, io_blocks = real["ihp_sg13g2_io_typ_1p2V_3p3V_25C.pdf"]
    tables = [b["text"] for b in io_blocks if b["kind"] == "table"]
    # Table.extract() reads this cell as "1440000000 ."
    assert any("| sg13g2_IOPadInOut16mA | 14400.00000 |" in t for t in tables)
    assert any(
        t.startswith("| INPUT c2p | INPUT c2p_en | INPUT pad | OUTPUT pad | OUTPUT p2c |\n") for t in tables
    )
    _, veer_blocks = real["veer_eh1_prm.pdf"]
    memory_map = next(
        b
        for b in veer_blocks
        if b["kind"] == "table" and b["text"].startswith("| Region | Start Address")
    )
    # header shading on a finer grid than the body: cells still land in their columns
    assert pipe_table_rows(memory_map["text"])[2] == [
        "0x0", "0x0004_0000", "0x0005_FFFF", "ICCM (region: 0, offset: 0x4000, size: 128KB)"]
    assert (
        json.loads(memory_map["meta"])["caption"]
        == "Table 2-10 VeeR EH1 Memory Address Map (Example)"
    )


def test_real_running_footers_are_dropped(real: Any) -> None:
    _, blocks = real["veer_eh1_prm.pdf"]
    assert not [b for b in blocks if "Licensed under Apache-2.0" in b["text"] and b["page"] > 2]
