"""A Symbol font's private-use glyphs are read as the characters they draw: the IHP process
specification's sheet resistances are in Ω and its current gain is β, not U+F057 / U+F062."""

from __future__ import annotations

from pathlib import Path

import pytest

from edaqa_pipeline.parsing.documents import parse_file
from edaqa_pipeline.parsing.pdf_layout import font_text
from edaqa_pipeline.text.markup import pipe_table_rows

SPEC = Path(__file__).resolve().parents[2] / "shared/corpus/datasheets/ihp_sg13g2_process_spec.pdf"


def test_symbol_private_use_glyphs_become_unicode() -> None:
    assert font_text("235 \uf057", "SymbolMT") == "235 Ω"
    assert font_text("\uf062 = \uf044I \uf0b1 1", "Symbol") == "β = ΔI ± 1"
    assert font_text("\uf0b7 Each chunk", "SymbolMT") == "• Each chunk"
    assert font_text("fF/\uf06dm", "SymbolMT") == "fF/µm"  # the micro sign units are written with


def test_other_fonts_keep_their_code_points() -> None:
    assert font_text("\uf062", "Marlett") == "\uf062"  # an icon font: the code point means nothing
    assert font_text("W", "Helvetica") == "W"


def test_the_process_specification_states_ohms() -> None:
    if not SPEC.is_file():
        pytest.skip(f"{SPEC} not present")
    _, blocks = parse_file(SPEC, SPEC.name)
    rows = [row for b in blocks if b["kind"] == "table" for row in pipe_table_rows(b["text"])]
    sheet = next(row for row in rows if "RSRPPD" in row)
    assert sheet[:6] == ["Sheet Resistance", "RSRPPD", "Ω", "235", "260", "285"]
    area = next(row for row in rows if "CMIMA" in row)
    assert area[2:6] == ["fF/µm²", "1.35", "1.5", "1.65"]
    assert not any("\uf057" in b["text"] for b in blocks)
