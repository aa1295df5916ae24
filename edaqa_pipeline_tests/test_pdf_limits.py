"""Book-length and pathological PDFs: the page-count bound is checked before any page is
read, a page over the time bound is left out and reported while the rest indexes, and a PDF's
outline gives its headings."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pymupdf
import pytest

from edaqa_pipeline.parsing.errors import DocumentError
from edaqa_pipeline.parsing.pdf import parse_pdf
from edaqa_pipeline.parsing.pdf_limits import PageTimeout, PdfLimits, page_time_bound
from edaqa_pipeline_tests.fixtures_index import REPO

STEPS = ("Placement spreads the cells over the core area.", "Clock tree synthesis inserts buffers.",
         "Global routing assigns nets to routing tracks.", "Detailed routing draws every wire.")


def _text_pages(n: int) -> pymupdf.Document:
    doc = pymupdf.open()
    for number in range(n):
        page = doc.new_page()
        page.insert_text((72, 72 + 20 * number), STEPS[number % len(STEPS)])
    return doc


def test_ten_thousand_empty_pages_are_refused_before_a_page_is_read() -> None:
    doc = pymupdf.open()
    for _ in range(10_000):
        doc.new_page()
    data = doc.tobytes()
    started = time.monotonic()
    with pytest.raises(DocumentError, match=r"^empty\.pdf: PDF has 10000 pages, more than the limit "
                                            r"of 5000 \(raise EDAQA_MAX_PDF_PAGES"):
        parse_pdf(data, "empty.pdf")
    assert time.monotonic() - started < 10
    with pytest.raises(DocumentError, match="has 3 pages, more than the limit of 2"):
        parse_pdf(_text_pages(3).tobytes(), "three.pdf", PdfLimits(max_pages=2))


def test_a_page_over_the_time_bound_is_left_out_and_the_rest_indexes() -> None:
    doc = _text_pages(3)
    heavy = doc[1]  # thousands of separate vector paths: seconds of layout analysis
    for i in range(3000):
        x, y = (i % 100) * 5 + 20, (i // 100) * 11 + 100
        shape = heavy.new_shape()
        shape.draw_rect((x, y, x + 3, y + 3))
        shape.finish(width=0.3)
        shape.commit()
    started = time.monotonic()
    row, blocks = parse_pdf(doc.tobytes(), "slow.pdf", PdfLimits(page_seconds=1.0))
    assert time.monotonic() - started < 20
    assert sorted({b["page"] for b in blocks}) == [1, 3]
    failed = json.loads(row["failed_pages"])
    assert [f["page"] for f in failed] == [2]
    assert "took longer than 1 s (raise EDAQA_PDF_PAGE_SECONDS" in failed[0]["error"]
    assert row["n_pages"] == 3


def test_no_readable_page_fails_the_file_by_name() -> None:
    with pytest.raises(DocumentError, match=r"^all\.pdf: no page could be read \(page 1: took longer"):
        parse_pdf(_text_pages(2).tobytes(), "all.pdf", PdfLimits(page_seconds=1e-6))


def test_the_time_bound_interrupts_a_stalled_page_and_restores_an_outer_timer() -> None:
    import signal

    signal.setitimer(signal.ITIMER_REAL, 300)
    try:
        started = time.monotonic()
        with pytest.raises(PageTimeout), page_time_bound(0.2):
            while True:
                time.sleep(0.01)
        assert time.monotonic() - started < 2
        assert 290 < signal.getitimer(signal.ITIMER_REAL)[0] <= 300
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def test_the_outline_gives_headings_their_levels(tmp_path: Path) -> None:
    manuals = tmp_path / "manuals"
    manuals.mkdir()
    (manuals / "guide.md").write_text(
        "# Placement Guide\n\nIntro text about placement.\n\n## Global Placement\n\n"
        "Run `global_placement` first.\n\n### Density\n\nSet `-density 0.7` for a sparse design.\n\n"
        "## Detailed Placement\n\nRun `detailed_placement` to legalize.\n")
    subprocess.run([sys.executable, str(REPO / "scripts" / "build_pdf_manuals.py"), "--corpus", str(manuals),
                    "--out", str(tmp_path / "pdf"), "--no-book"], check=True, capture_output=True)
    pdf = tmp_path / "pdf" / "manuals" / "manuals" / "guide.pdf"
    with pymupdf.open(pdf) as doc:
        assert [entry[:2] for entry in doc.get_toc()] == [
            [1, "Placement Guide"], [2, "Global Placement"], [3, "Density"], [2, "Detailed Placement"]]
    _, blocks = parse_pdf(pdf.read_bytes(), "guide.pdf")
    headings = [(b["heading_level"], b["text"]) for b in blocks if b["kind"] == "heading"]
    assert headings == [(1, "Placement Guide"), (2, "Global Placement"), (3, "Density"),
                        (2, "Detailed Placement")]
    density = next(b for b in blocks if "-density 0.7" in b["text"])
    assert density["section_path"] == ["Placement Guide", "Global Placement", "Density"]
    line_map = json.loads((tmp_path / "pdf" / "manuals.line_map.json").read_text())
    page_of = {row[0]: row[1] for row in line_map["guide.md"]["lines"]}
    assert page_of[11] == density["page"]  # the map's page of the Markdown line = the parsed page


def _render(tmp_path: Path, markdown: str) -> list[dict[str, object]]:
    """``markdown`` as ``guide.md`` rendered by the PDF build script and parsed back."""
    manuals = tmp_path / "manuals"
    manuals.mkdir()
    (manuals / "guide.md").write_text(markdown)
    subprocess.run([sys.executable, str(REPO / "scripts" / "build_pdf_manuals.py"), "--corpus", str(manuals),
                    "--out", str(tmp_path / "pdf"), "--no-book"], check=True, capture_output=True)
    pdf = tmp_path / "pdf" / "manuals" / "manuals" / "guide.pdf"
    return parse_pdf(pdf.read_bytes(), "guide.pdf")[1]


def test_a_wrapped_title_matches_the_bookmark_that_joins_its_lines(tmp_path: Path) -> None:
    # the outline names the title "... RailroadDiagrams": the layout wrapped it over two lines
    # and the bookmark joined them without a space. The outline fits (5 of its 6 entries match
    # without this), so headings come from it; the title must still be the level-1 heading
    sections = ("Non-default Rules", "Properties", "Macros", "Sites", "Vias")
    blocks = _render(tmp_path, "# LEF Grammar Railroad Diagrams\n\nThe grammar of the library files.\n\n"
                     + "".join(f"## {name}\n\nText of {name.lower()}.\n\n" for name in sections))
    headings = [(b["heading_level"], b["text"]) for b in blocks if b["kind"] == "heading"]
    assert headings == [(1, "LEF Grammar Railroad Diagrams"), *((2, name) for name in sections)]
    rules = next(b for b in blocks if b["text"] == "Text of non-default rules.")
    assert rules["section_path"] == ["LEF Grammar Railroad Diagrams", "Non-default Rules"]


def test_a_bookmark_with_a_zero_width_space_matches_its_heading(tmp_path: Path) -> None:
    # the bookmark keeps the zero-width space a generator put into a long name; the page text
    # does not: both are cleaned alike, so the heading is still found and keeps its level
    sections = ("Overview", "set_global_\u200brouting_layer", "Options", "Examples", "Limits")
    blocks = _render(tmp_path, "# Global Routing\n\nRoutes the nets.\n\n"
                     + "".join(f"## {name}\n\nText of section {n}.\n\n" for n, name in enumerate(sections)))
    levels = {"".join(str(b["text"]).split()): b["heading_level"] for b in blocks if b["kind"] == "heading"}
    assert levels.get("set_global_routing_layer") == 2


def test_a_long_name_in_a_narrow_column_is_drawn_and_read_whole(tmp_path: Path) -> None:
    # a long option name would widen its column past the page edge; the build breaks it after
    # an underscore, as LaTeX does, and the parser joins it back: no text is cut off
    blocks = _render(tmp_path, "# CTS\n\n| Switch Name | Description |\n| ----- | ----- |\n"
                               "| `-branching_point_buffers_distance` | Distance (in microns) that a branch has to "
                               "have for a buffer; needs `-distance_between_buffers` set. The non-default "
                               "strategy applies. |\n")
    table = next(b for b in blocks if b["kind"] == "table")
    text = str(table["text"])
    assert "-branching_point_buffers_distance" in text and "-distance_between_buffers" in text
    assert "non-default" in text and "strategy applies" in text


def test_a_page_drawn_far_outside_its_box_parses_and_the_rest_indexes() -> None:
    """A damaged page whose ruling runs to coordinates of 1e44 (invisible: off the page) once
    made the grid clustering walk a plane of that size; it is cut to the page now, so the
    page parses at once and nothing is lost."""
    doc = pymupdf.open()
    for number, step in enumerate(STEPS[:3]):
        page = doc.new_page()
        page.insert_text((72, 72 + 40 * number), step)
    big = b"9" * 45
    damaged = doc[1]
    doc.update_stream(damaged.get_contents()[0],
                      b"q 1 w 0 0 m " + big + b" 0 l S 0 10 m " + big + b" 10 l S 0 0 m 0 " + big
                      + b" l S 10 0 m 10 " + big + b" l S Q BT /helv 11 Tf 72 300 Td (" + STEPS[3].encode()
                      + b") Tj ET")
    doc.xref_set_key(damaged.xref, "Resources",
                     "<< /Font << /helv << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>")
    started = time.monotonic()
    row, blocks = parse_pdf(doc.tobytes(), "damaged.pdf", PdfLimits(page_seconds=30))
    assert time.monotonic() - started < 10
    assert json.loads(row["failed_pages"]) == []
    assert [(b["page"], b["text"]) for b in blocks] == [(1, STEPS[0]), (2, STEPS[3]), (3, STEPS[2])]
