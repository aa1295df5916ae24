"""Code inside list items and page text that looks like markup: a fenced block in a Markdown
list item (or a ``<pre>`` in an HTML ``<li>``) is a code block like any other, every line is
written once, and the text of an HTML paragraph is read back as the text it is."""

from __future__ import annotations

import json

from edaqa_pipeline.parsing.html import parse_html
from edaqa_pipeline.parsing.markdown import parse_markdown

STEPS = """\
# Routing flow

1. **Initial phase** (high DRV):
   ```
   Optimization -> Optimization
   ```

2. **Mid-convergence**:
   ```tcl
   detailed_route -droute_end_iter 5
   ```
   then check the report.

3. **Done**.
"""


def _blocks(markdown: str) -> list[dict]:
    return parse_markdown(markdown.encode(), "flow.md")[1]


def test_fence_inside_a_list_item_is_a_code_block() -> None:
    blocks = _blocks(STEPS)
    kinds = [(b["kind"], b["start_line"], b["end_line"]) for b in blocks]
    assert kinds == [
        ("heading", 1, 1),
        ("ordered_list", 3, 3),
        ("code", 4, 6),
        ("ordered_list", 8, 8),
        ("code", 9, 11),
        ("ordered_list", 12, 14),
    ]
    code = [b for b in blocks if b["kind"] == "code"]
    assert code[0]["text"] == "Optimization -> Optimization"
    assert code[1]["text"] == "detailed_route -droute_end_iter 5"
    assert code[1]["language"] == "tcl"


def test_every_list_line_is_written_once_in_order() -> None:
    blocks = _blocks(STEPS)
    covered = [n for b in blocks for n in range(b["start_line"], b["end_line"] + 1)]
    assert covered == sorted(set(covered))
    lines = STEPS.split("\n")
    non_blank = {n for n, line in enumerate(lines, 1) if line.strip()}
    assert non_blank <= set(covered)
    assert "then check the report." in blocks[-1]["text"]


def test_a_list_without_code_stays_one_block() -> None:
    blocks = _blocks("- one\n- two\n\n  more of two\n- three\n")
    assert [(b["kind"], b["start_line"], b["end_line"]) for b in blocks] == [("list", 1, 5)]


def _html_blocks(body: str) -> list[dict]:
    page = f"<html><head><title>T</title></head><body><main>{body}</main></body></html>"
    return parse_html(page.encode(), "page.html")[1]


def test_paragraph_text_is_not_read_as_markup() -> None:
    blocks = _html_blocks(
        "<h1>Report</h1><p># of nets is printed first.</p><p>1. is not a step here</p>"
        "<p>- a dash</p><p>&gt; a quote mark</p><p>&lt;div&gt; is a tag name</p>"
    )
    assert [b["kind"] for b in blocks] == ["heading"] + ["paragraph"] * 5
    assert blocks[1]["text"].endswith("# of nets is printed first.")
    assert [b["heading_level"] for b in blocks] == [1, 0, 0, 0, 0, 0]


def test_pre_inside_a_list_item_is_code() -> None:
    blocks = _html_blocks(
        "<h1>Flow</h1><ol start='3'><li>Route the design:<pre>detailed_route\nreport_drc</pre></li>"
        "<li>Write the result.</li></ol>"
    )
    kinds = [b["kind"] for b in blocks]
    assert kinds == ["heading", "ordered_list", "code", "ordered_list"]
    assert blocks[1]["text"].startswith("3. Route the design:")
    assert blocks[2]["text"] == "detailed_route\nreport_drc"
    assert blocks[3]["text"].startswith("4. Write the result.")


def test_myst_code_block_is_code_not_an_admonition() -> None:
    blocks = _blocks("# Flow\n\n```{code-block} tcl\n:caption: route\n\ndetailed_route\n```\n\n"
                     "```{note}\nRun it once.\n```\n")
    assert [(b["kind"], b["language"]) for b in blocks] == [
        ("heading", ""), ("code", "tcl"), ("admonition", "")]
    assert blocks[1]["text"] == "detailed_route"
    assert blocks[1]["line_kinds"][0] == "code_fence"


def test_an_item_that_is_only_code_leaves_no_bare_marker() -> None:
    blocks = _blocks("-\n  ```\n  x\n  ```\n- b\n")
    assert [(b["kind"], b["text"]) for b in blocks] == [("code", "x"), ("list", "- b")]


def test_myst_yaml_options_are_not_code() -> None:
    blocks = _blocks("# T\n\n```{code-block} tcl\n---\ncaption: c\n---\nputs 1\n```\n")
    assert blocks[1]["text"] == "puts 1"


def test_text_after_code_in_an_item_follows_the_code() -> None:
    blocks = _html_blocks("<ol><li>Run:<pre>route</pre>then check the report.</li><li>Done.</li></ol>")
    assert [(b["kind"], b["text"].split("\n")[0].strip()) for b in blocks] == [
        ("ordered_list", "1. Run:"), ("code", "route"), ("ordered_list", "then check the report.")]
    assert blocks[2]["text"].endswith("2. Done.")


def test_only_what_would_open_a_block_is_escaped() -> None:
    blocks = _html_blocks("<p>&lt;cell&gt; is the name</p><p>_ _ _</p><p>[1]: https://example.com/x</p>"
                          "<dl><dt>a</dt><dd>``` not code</dd></dl>")
    assert [b["kind"] for b in blocks] == ["paragraph", "paragraph", "paragraph", "list"]
    assert blocks[0]["text"] == "<cell> is the name"
    assert "not code" in blocks[3]["text"]


def test_a_fence_closed_inside_a_quote_is_terminated() -> None:
    blocks = _blocks("- a\n  > ```\n  > x\n  > ```\n- b\n")
    (code,) = [b for b in blocks if b["kind"] == "code"]
    assert code["text"] == "x"
    assert "unterminated_fence" not in code["meta"]
    assert "unterminated_fence" in json.loads(_blocks("```\nx\n")[0]["meta"])
