"""The HTML parser: a documentation page becomes the blocks a Markdown manual gives, with the
site chrome dropped, each block's anchor and page lines kept, and bad pages refused by name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from edaqa_pipeline.parsing.documents import parse_document, parse_file
from edaqa_pipeline.parsing.errors import DocumentError
from edaqa_pipeline.parsing.html import parse_html

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>CTS &mdash; OpenROAD documentation</title></head>
<body>
<nav class="wy-nav-side"><div role="search"><input name="q" placeholder="Search docs"></div>
<ul><li><a href="index.html">Home</a></li><li><a href="gpl.html">Global Placement</a></li></ul></nav>
<div class="wy-nav-content">
<div role="navigation" aria-label="Page navigation"><ul class="wy-breadcrumbs"><li>Docs</li>
<li><a href="https://github.com/x/blob/master/cts.md" class="fa fa-github">Edit on GitHub</a></li></ul></div>
<div role="main" class="document">
<section id="clock-tree-synthesis">
<h1>Clock Tree Synthesis<a class="headerlink" href="#clock-tree-synthesis" title="Link">¶</a></h1>
<p>The <code class="docutils literal"><span class="pre">clock_tree_synthesis</span></code> command
builds the clock tree.</p>
<section id="options">
<h2>Options<a class="headerlink" href="#options">¶</a></h2>
<table class="docutils align-default">
<thead><tr><th>Switch Name</th><th>Description</th></tr></thead>
<tbody><tr><td><code>-sink_clustering_size</code></td><td>Maximum sinks per cluster. The default value is <code>20</code>.</td></tr>
<tr><td><code>-root_buf</code></td><td>Root buffer | cell.</td></tr></tbody></table>
<div class="highlight-tcl notranslate"><div class="highlight"><pre><span></span>clock_tree_synthesis -root_buf BUF_X4
report_cts</pre></div></div>
<div class="admonition warning"><p class="admonition-title">Warning</p><p>Run <code>estimate_parasitics</code> first.</p></div>
<ul><li>place the design<ul><li>check it</li></ul></li><li>then see <a href="gpl.html#options">the placer options</a></li></ul>
</section></section>
</div>
<footer><div class="rst-footer-buttons"><a href="gpl.html">Next</a></div>
<p>&copy; Copyright 2024, The OpenROAD Project. Built with Sphinx using a theme.</p></footer>
</div></body></html>
"""

CHROME = ("Search docs", "Edit on GitHub", "Home", "Global Placement", "Next", "Copyright",
          "Built with Sphinx", "¶", "Docs")


def _blocks(data: bytes, name: str = "cts.html") -> tuple[dict, list[dict]]:
    return parse_html(data, name)


def test_page_content_becomes_markdown_blocks_without_the_site_chrome() -> None:
    doc, blocks = _blocks(PAGE.encode())
    assert doc["format"] == "html" and doc["title"] == "Clock Tree Synthesis"
    text = "\n".join(b["raw"] for b in blocks)
    for chrome in CHROME:
        assert chrome not in text, chrome
    kinds = [b["kind"] for b in blocks]
    assert kinds == ["heading", "paragraph", "heading", "table", "code", "admonition", "list"]
    table = blocks[3]
    assert table["raw"].split("\n")[0] == "| Switch Name | Description |"
    assert "| `-sink_clustering_size` | Maximum sinks per cluster. The default value is `20`. |" in table["raw"]
    assert "Root buffer \\| cell." in table["raw"]  # a pipe in a cell does not split the row
    assert table["line_kinds"] == ["table_header", "table_rule", "table_row", "table_row"]
    assert json.loads(table["meta"])["header"] == ["Switch Name", "Description"]
    code = blocks[4]
    assert code["language"] == "tcl" and code["text"] == "clock_tree_synthesis -root_buf BUF_X4\nreport_cts"
    assert json.loads(blocks[5]["meta"])["label"] == "warning"
    assert "Run `estimate_parasitics` first." in blocks[5]["text"]
    assert "[the placer options](gpl.html#options)" in blocks[6]["raw"]  # a link the graph resolves
    assert blocks[2]["section_path"] == ["Clock Tree Synthesis", "Options"]


def test_every_block_names_its_anchor_and_the_page_lines_it_came_from() -> None:
    _, blocks = _blocks(PAGE.encode())
    page_lines = PAGE.split("\n")
    anchors = [json.loads(b["meta"])["anchor"] for b in blocks]
    assert anchors[:2] == ["clock-tree-synthesis"] * 2 and set(anchors[2:]) == {"options"}
    for block in blocks:
        first, last = json.loads(block["meta"])["html_lines"]
        source = "\n".join(page_lines[first - 1:last])
        words = re.findall(r"[A-Za-z_]{4,}", block["text"])
        assert words and words[0] in source, (block["text"], first, last)
    # rendition lines are contiguous and numbered like a Markdown file's
    assert [b["start_line"] for b in blocks] == sorted(b["start_line"] for b in blocks)


def test_same_page_gives_the_same_blocks() -> None:
    assert _blocks(PAGE.encode()) == _blocks(PAGE.encode())


def test_declared_charset_and_htm_suffix() -> None:
    latin = ("<html><head><meta http-equiv='Content-Type' content='text/html; charset=iso-8859-1'>"
             "</head><body><main><p>Résistance de sortie: 50 Ω</p></main></body></html>")
    data = latin.replace(" Ω", "").encode("iso-8859-1")
    _, blocks = parse_document(data, "pads.htm")
    assert blocks[0]["text"] == "Résistance de sortie: 50"
    utf16 = "\ufeff<html><body><main><h1>Wide</h1><p>Text in UTF-16.</p></main></body></html>"
    _, blocks = parse_document(utf16.encode("utf-16-le"), "wide.html")
    assert [b["text"] for b in blocks] == ["Wide", "Text in UTF-16."]
    with pytest.raises(DocumentError, match="charset 'no-such-charset' is unknown"):
        parse_html(b"<meta charset='no-such-charset'><p>x</p>", "bad.html")


@pytest.mark.parametrize("label", ["us-ascii", "iso-8859-1", "utf-16"])
def test_charset_labels_are_read_as_browsers_read_them(label: str) -> None:
    # a page saved by a Windows editor (cp1252 bytes) declared ASCII or Latin-1, and a UTF-8
    # page whose meta tag says utf-16 (it was readable as ASCII, so it is not UTF-16)
    text = "<p>Pitch 0.5 \u00b5m \u2013 see CORE_UTILIZATION\u2019s note</p>"
    data = f"<html><head><meta charset='{label}'></head><body>{text}</body></html>"
    encoded = data.encode("utf-8" if label == "utf-16" else "cp1252")
    _, blocks = parse_html(encoded, "pads.html")
    assert blocks[0]["text"] == "Pitch 0.5 \u00b5m \u2013 see CORE_UTILIZATION\u2019s note"


def test_a_codec_that_is_no_charset_and_utf32_are_refused_naming_the_file() -> None:
    with pytest.raises(DocumentError, match=r"hex\.html: declared charset 'hex' is not a character encoding"):
        parse_html(b"<meta charset='hex'><p>x</p>", "hex.html")
    with pytest.raises(DocumentError, match=r"wide\.html: UTF-32"):
        parse_html("<html><p>x</p></html>".encode("utf-32"), "wide.html")


def test_malformed_markup_keeps_what_it_can() -> None:
    broken = b"<html><body><div role=main><h2>Heading<p>First <b>bold paragraph<p>Second</div></span></table><ul><li>item"
    _, blocks = parse_html(broken, "broken.html")
    texts = [b["text"] for b in blocks]
    assert "Heading" in texts[0] and any("Second" in t for t in texts)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "file is empty"),
        (b"   \n", "file is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary content: NUL byte at offset"),
        (b"<html><body><nav>only navigation</nav></body></html>", "no content"),
    ],
)
def test_bad_pages_fail_by_name(data: bytes, problem: str) -> None:
    with pytest.raises(DocumentError) as err:
        parse_html(data, "site/bad.html")
    assert str(err.value).startswith("site/bad.html: ") and problem in str(err.value)


def test_a_page_of_chrome_only_is_indexed_as_its_title() -> None:
    search = b"<html><head><title>Search</title></head><body><div role=main><form><input></form><noscript>Enable JavaScript</noscript></div></body></html>"
    _, blocks = parse_html(search, "search.html")
    assert [(b["kind"], b["text"]) for b in blocks] == [("heading", "Search")]


def test_an_oversized_page_is_refused_before_it_is_read(tmp_path: Path) -> None:
    page = tmp_path / "huge.html"
    with page.open("wb") as fh:  # 50 MB of real markup
        chunk = b"<p>" + b"timing arc " * 90 + b"</p>\n"
        for _ in range((50 << 20) // len(chunk) + 1):
            fh.write(chunk)
    with pytest.raises(DocumentError, match=r"huge.html: file is 50.0 MiB, larger than the 20 MiB limit"):
        parse_file(page, "huge.html", max_mb=20)
