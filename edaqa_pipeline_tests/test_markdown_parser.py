"""Markdown parser: exact blocks (kind, section path, text, 1-based line spans, meta) and the
refusals of input that is not Markdown text. Pure functions only, no Dagster."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edaqa_pipeline.model import BLOCK_KINDS
from edaqa_pipeline.parsing.documents import parse_document
from edaqa_pipeline.parsing.errors import DocumentError
from edaqa_pipeline.parsing.markdown import decode_markdown, parse_markdown

SAMPLE = """\
# Title ##

Intro paragraph
on two lines.

## Section A

- item one
- item two

1. first
2. second

```tcl
define_pdn_grid -name g
```

~~~python
print(1)
~~~

| Switch | Description |
| --- | --- |
| `-name` | grid name |
| `-pitch` | pitch |

> a quote

> **Note:** be careful.

```{warning}
Do not do this.
```

![Floorplan view](img/fp.png)

### Options

text
"""


def parse(src: str | bytes, name: str = "t.md") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return parse_markdown(src.encode() if isinstance(src, str) else src, name)


def summary(blocks: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (b["kind"], b["section_path"], b["text"], b["start_line"], b["end_line"], json.loads(b["meta"]))
        for b in blocks
    ]


@pytest.fixture(scope="module")
def sample() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return parse(SAMPLE)


def test_sample_blocks_exact(sample: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    _, blocks = sample
    t, a = ["Title"], ["Title", "Section A"]
    assert summary(blocks) == [
        ("heading", t, "Title", 1, 1, {}),
        ("paragraph", t, "Intro paragraph\non two lines.", 3, 4, {}),
        ("heading", a, "Section A", 6, 6, {}),
        ("list", a, "- item one\n- item two", 8, 9, {}),
        ("ordered_list", a, "1. first\n2. second", 11, 12, {}),
        ("code", a, "define_pdn_grid -name g", 14, 16, {"fence": "`"}),
        ("code", a, "print(1)", 18, 20, {"fence": "~"}),
        (
            "table",
            a,
            "| Switch | Description |\n| --- | --- |\n| `-name` | grid name |\n| `-pitch` | pitch |",
            22,
            25,
            {"header": ["Switch", "Description"], "n_rows": 2},
        ),
        ("blockquote", a, "> a quote", 27, 27, {}),
        ("admonition", a, "> **Note:** be careful.", 29, 29, {"label": "note"}),
        ("admonition", a, "Do not do this.", 31, 33, {"label": "warning"}),
        ("image", a, "Floorplan view (img/fp.png)", 35, 35, {"alt": "Floorplan view", "src": "img/fp.png"}),
        ("heading", [*a, "Options"], "Options", 37, 37, {}),
        ("paragraph", [*a, "Options"], "text", 39, 39, {}),
    ]


def test_sample_levels_languages_and_document_row(
    sample: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    doc, blocks = sample
    assert [b["heading_level"] for b in blocks if b["kind"] == "heading"] == [1, 2, 3]
    assert all(b["heading_level"] == 0 for b in blocks if b["kind"] != "heading")
    assert [b["language"] for b in blocks if b["kind"] == "code"] == ["tcl", "python"]
    assert [b["ordinal"] for b in blocks] == list(range(len(blocks)))
    assert {b["kind"] for b in blocks} <= set(BLOCK_KINDS)
    assert all(b["page"] is None and b["bbox"] is None and b["document"] == "t.md" for b in blocks)
    assert len({b["block_id"] for b in blocks}) == len(blocks)
    assert doc["format"] == "markdown"
    assert doc["title"] == "Title"
    assert doc["n_lines"] == 39
    assert doc["n_pages"] == 0
    assert doc["n_bytes"] == len(SAMPLE.encode())


def test_raw_is_the_exact_source_lines_of_the_span(
    sample: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    _, blocks = sample
    lines = SAMPLE.split("\n")
    for block in blocks:
        assert 1 <= block["start_line"] <= block["end_line"] <= 39
        assert block["raw"] == "\n".join(lines[block["start_line"] - 1 : block["end_line"]])
    code = [b for b in blocks if b["kind"] == "code"]
    assert [c["raw"] for c in code] == [
        "```tcl\ndefine_pdn_grid -name g\n```",
        "~~~python\nprint(1)\n~~~",
    ]
    assert blocks[0]["raw"] == "# Title ##"  # raw keeps the closing hashes, text does not


def test_closing_heading_hashes_are_stripped() -> None:
    _, blocks = parse("# A #\n## B ###\n# D#\n")
    assert [(b["text"], b["section_path"], b["heading_level"]) for b in blocks] == [
        ("A", ["A"], 1),
        ("B", ["A", "B"], 2),
        ("D#", ["D#"], 1),  # no space before '#': part of the text (CommonMark)
    ]


def test_section_path_pops_to_the_right_level() -> None:
    _, blocks = parse("# A\n## B\n### C\nx\n## D\ny\n# E\nz\n")
    assert [(b["kind"], b["section_path"]) for b in blocks] == [
        ("heading", ["A"]),
        ("heading", ["A", "B"]),
        ("heading", ["A", "B", "C"]),
        ("paragraph", ["A", "B", "C"]),
        ("heading", ["A", "D"]),
        ("paragraph", ["A", "D"]),
        ("heading", ["E"]),
        ("paragraph", ["E"]),
    ]


def test_code_fence_content_excludes_fences_and_keeps_inner_blank_lines() -> None:
    _, blocks = parse("~~~~ Tcl extra\nset a 1\n\nputs $a\n~~~~\n")
    assert summary(blocks) == [("code", [], "set a 1\n\nputs $a", 1, 5, {"fence": "~"})]
    assert blocks[0]["language"] == "tcl"  # first word of the info string, lower-cased


def test_indented_code_block() -> None:
    _, blocks = parse("para\n\n    indented code\n")
    assert summary(blocks)[1] == ("code", [], "indented code", 3, 3, {"fence": "indent"})
    assert blocks[1]["language"] == ""


def test_admonition_variants() -> None:
    _, blocks = parse(
        "> [!WARNING]\n> Careful here.\n\n> Note: plain\n\n> **Important** stuff\n\n"
        "```{note}\nA MyST note.\n```\n\n```{toctree}\nindex\n```\n"
    )
    assert [(b["kind"], b["text"], b["start_line"], b["end_line"], json.loads(b["meta"])) for b in blocks] == [
        ("admonition", "> [!WARNING]\n> Careful here.", 1, 2, {"label": "warning"}),
        ("admonition", "> Note: plain", 4, 4, {"label": "note"}),
        ("admonition", "> **Important** stuff", 6, 6, {"label": "important"}),
        ("admonition", "A MyST note.", 8, 10, {"label": "note"}),
        # toctree directives are navigation, not content: dropped
    ]


def test_image_inside_a_paragraph_gives_image_and_paragraph() -> None:
    _, blocks = parse("Some text ![fig](a.png) inline.\n\n![only](b.svg)\n")
    assert summary(blocks) == [
        ("image", [], "fig (a.png)", 1, 1, {"alt": "fig", "src": "a.png"}),
        ("paragraph", [], "Some text ![fig](a.png) inline.", 1, 1, {}),
        ("image", [], "only (b.svg)", 3, 3, {"alt": "only", "src": "b.svg"}),
    ]


def test_html_comments_dropped_other_html_kept() -> None:
    _, blocks = parse("<!-- comment -->\n\n<div>x</div>\n")
    assert summary(blocks) == [("html", [], "<div>x</div>", 3, 3, {})]


def test_no_heading_title_falls_back_to_document_name() -> None:
    doc, _ = parse("just text\n", "docs/x.md")
    assert doc["title"] == "docs/x.md"


def test_bom_and_crlf() -> None:
    data = b"\xef\xbb\xbf# Title\r\n\r\nPara one\r\nline two\r\n\r\n## Sub ##\r\n"
    doc, blocks = parse(data)
    assert summary(blocks) == [
        ("heading", ["Title"], "Title", 1, 1, {}),
        ("paragraph", ["Title"], "Para one\nline two", 3, 4, {}),
        ("heading", ["Title", "Sub"], "Sub", 6, 6, {}),
    ]
    assert all("\r" not in b["raw"] and "\ufeff" not in b["raw"] for b in blocks)
    assert doc["n_lines"] == 6
    assert doc["n_bytes"] == len(data)
    # the same document without BOM and CRLF gives the same blocks (ids included)
    _, plain = parse(data[3:].replace(b"\r\n", b"\n"))
    assert [b["block_id"] for b in plain] == [b["block_id"] for b in blocks]


def test_decode_markdown_normalises_bom_cr_and_crlf() -> None:
    assert decode_markdown(b"\xef\xbb\xbfa\r\nb\rc\n", "x.md") == "a\nb\nc\n"


def test_unterminated_fence_runs_to_end_of_file() -> None:
    src = "# A\n\n```tcl\nfoo_bar 1\n\nbaz\n\n\n"
    _, blocks = parse(src)
    assert summary(blocks) == [
        ("heading", ["A"], "A", 1, 1, {}),
        ("code", ["A"], "foo_bar 1\n\nbaz", 3, 6, {"fence": "`", "unterminated_fence": True}),
    ]
    assert blocks[1]["language"] == "tcl"
    assert blocks[1]["raw"] == "```tcl\nfoo_bar 1\n\nbaz"  # trailing blank lines trimmed


def test_terminated_fence_has_no_unterminated_flag() -> None:
    _, blocks = parse("```\nx\n```\n")
    assert json.loads(blocks[0]["meta"]) == {"fence": "`"}


FENCE_BUG = "markdown.py: the unterminated check accepts any fence-like last line, not only a " \
    "closing fence of the opening character and length (see report)"


@pytest.mark.parametrize(
    "src",
    [
        pytest.param("# A\n\n```tcl\nfoo_bar 1\n~~~\n", id="backtick-fence-ending-in-tildes"),
        pytest.param("# A\n\n````\nfoo_bar 1\n```\n", id="four-backticks-ending-in-three"),
    ],
)
def test_unterminated_fence_whose_last_line_looks_like_another_fence(src: str) -> None:
    """CommonMark: a closing fence must use the opening character, at least as many times.
    These fences are never closed (markdown-it runs them to EOF), so they are unterminated."""
    _, blocks = parse(src)
    code = blocks[1]
    assert code["text"] == "foo_bar 1\n" + src.rstrip("\n").rsplit("\n", 1)[-1]
    assert json.loads(code["meta"]).get("unterminated_fence") is True


EMPTY_BLOCK_BUG = (
    "markdown.py emits blocks with empty text, which fail the blocking parsed_documents "
    "structure check, so a valid document fails to index (see report)"
)


@pytest.mark.parametrize(
    "src",
    [
        pytest.param("# A\n\nText.\n\n```tcl\n```\n", id="empty-code-fence"),
        pytest.param("# A\n\nText.\n\n```tcl\n", id="unterminated-empty-fence-at-eof"),
        pytest.param("# A\n\nText.\n\n```{note}\n```\n", id="empty-myst-directive"),
        pytest.param("#\n\nText.\n", id="empty-heading"),
    ],
)
def test_valid_markdown_never_yields_blocks_with_empty_text(src: str) -> None:
    _, blocks = parse(src)
    assert blocks
    assert all(b["text"].strip() for b in blocks), [(b["kind"], b["text"]) for b in blocks]


# --- input that is not Markdown text -------------------------------------------------------


def refusal(data: bytes, name: str = "docs/bad.md") -> DocumentError:
    with pytest.raises(DocumentError) as info:
        parse_markdown(data, name)
    assert info.value.document == name
    assert str(info.value).startswith(f"{name}: ")
    return info.value


@pytest.mark.parametrize("data", [b"", b"   \n\n\t\r\n"], ids=["empty", "whitespace-only"])
def test_empty_file(data: bytes) -> None:
    assert refusal(data).problem == "file is empty (no Markdown content)"


def test_bom_only_file_is_empty() -> None:
    assert refusal(b"\xef\xbb\xbf\r\n").problem == "file is empty (no Markdown content)"


def test_comment_only_file_is_refused() -> None:
    assert "no Markdown content" in refusal(b"<!-- nothing here -->\n").problem


def test_nul_bytes() -> None:
    err = refusal(b"# A\x00bc")
    assert err.problem == "binary content: NUL byte at offset 3; not a text file"


def test_invalid_utf8_names_the_byte_offset() -> None:
    err = refusal(b"# Title\n\nCaf\xe9 au lait\n")
    assert err.problem == (
        "invalid UTF-8 at byte 12 (b'\\xe9'): invalid continuation byte; re-encode the file as UTF-8"
    )
    assert str(err) == f"docs/bad.md: {err.problem}"


def test_truncated_utf8_sequence_at_end() -> None:
    err = refusal(b"# Title\n\nCaf\xc3")
    assert err.problem.startswith("invalid UTF-8 at byte 12 (b'\\xc3'): unexpected end of data")


def test_invalid_utf8_offset_counts_the_bom() -> None:
    err = refusal(b"\xef\xbb\xbf# T\n\xff\n")
    assert err.problem.startswith("invalid UTF-8 at byte 7 (b'\\xff')")


def test_document_error_is_a_value_error() -> None:
    err = DocumentError("a.md", "broken")
    assert isinstance(err, ValueError)
    assert (err.document, err.problem, str(err)) == ("a.md", "broken", "a.md: broken")


# --- parse_document: checks for every format -----------------------------------------------


def test_parse_document_dispatches_markdown_by_suffix() -> None:
    for name in ("a.md", "b.MD", "c.markdown"):
        doc, blocks = parse_document(b"# Hi\n", name)
        assert doc["format"] == "markdown"
        assert blocks[0]["text"] == "Hi"


def test_parse_document_size_limit() -> None:
    data = b"word " * (1 << 19)  # 2.5 MiB
    with pytest.raises(DocumentError) as info:
        parse_document(data, "big.md", max_mb=2)
    assert str(info.value) == (
        "big.md: file is 2.5 MiB, larger than the 2 MiB limit "
        "(raise EDAQA_MAX_DOCUMENT_MB to index it)"
    )
    # at or under the limit it parses
    doc, _ = parse_document(data, "big.md", max_mb=3)
    assert doc["n_bytes"] == len(data)


def test_parse_document_size_limit_applies_before_format_checks() -> None:
    with pytest.raises(DocumentError, match=r"larger than the 0\.5 MiB limit"):
        parse_document(b"\x00" * (1 << 20), "x.txt", max_mb=0.5)


@pytest.mark.parametrize("name", ["notes.txt", "README", "page.xhtml", "data.md.bak"])
def test_parse_document_unsupported_suffix(name: str) -> None:
    with pytest.raises(DocumentError) as info:
        parse_document(b"# Hi\n", name)
    assert info.value.document == name
    assert info.value.problem == "unsupported file type (expected .md, .markdown, .html, .htm, .pdf)"
