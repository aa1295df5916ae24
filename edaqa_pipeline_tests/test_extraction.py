"""Extraction layer on small inputs: typed artifacts (exact), semantic rules, anchors,
occurrences, chunks and the order-independent table hashes. Pure functions only."""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from edaqa_pipeline.extraction.anchors import (
    choose_anchor,
    is_placeholder,
    normalise_anchor,
    rejection_reason,
)
from edaqa_pipeline.extraction.artifacts import command_name, extract_artifacts
from edaqa_pipeline.extraction.chunks import approx_tokens, block_chunk_map, build_chunks
from edaqa_pipeline.extraction.occurrences import build_occurrences, grouping_section
from edaqa_pipeline.extraction.semantic import (
    SemanticSpan,
    SemanticSpans,
    classify_sentence,
    offline_semantic_spans,
    validate_spans,
)
from edaqa_pipeline.model import (
    ARTIFACT_TYPES,
    ARTIFACTS_SCHEMA,
    BLOCKS_SCHEMA,
    CHUNKS_SCHEMA,
    OCCURRENCES_SCHEMA,
    frame,
    normalise_ws,
)
from edaqa_pipeline.parsing.markdown import parse_markdown
from edaqa_pipeline.storage.hashing import content_hash, semantic_hash
from edaqa_pipeline.text.identifiers import file_names, inline_code_spans
from edaqa_pipeline.text.sentences import split_sentences
from edaqa_pipeline.validation import structure

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "data" / "sample"

Rows = list[dict[str, Any]]


def blocks_of(src: str, name: str = "t.md") -> Rows:
    return parse_markdown(src.encode(), name)[1]


def pipeline(src: str, name: str = "t.md", **occ: Any) -> tuple[Rows, Rows, Rows, Rows]:
    """blocks, artifacts, chunks, occurrences of one Markdown source."""
    blocks = blocks_of(src, name)
    artifacts = extract_artifacts(blocks)
    chunks = build_chunks(blocks)
    return blocks, artifacts, chunks, build_occurrences(blocks, artifacts, chunks, **occ)


def brief(artifacts: Rows) -> list[tuple[Any, ...]]:
    return [(a["artifact_type"], a["rule"], a["start_line"], a["end_line"], a["content"]) for a in artifacts]


# --- typed artifacts --------------------------------------------------------------------

GRID = """\
# Grid Tool

## define_pdn_grid

The `define_pdn_grid` command creates a grid. The pitch must be at least 2 microns.

```tcl
define_pdn_grid -name core -pitch 10
```

### Options

| Switch | Description |
| --- | --- |
| `-name` | Name of the grid, see `add_pdn_stripe`. |

If the grid is empty the tool reports PDN-0042 and stops.

1. Read the design.
2. Run `define_pdn_grid`.

The grid is written to results/grid.def for later steps.

![Grid view](img/grid.png)
"""


def test_artifacts_of_a_command_section_exact() -> None:
    artifacts = extract_artifacts(blocks_of(GRID, "grid.md"))
    assert brief(artifacts) == [
        ("text", "prose.untyped_sentences", 5, 5, "The `define_pdn_grid` command creates a grid."),
        ("constraint", "constraint.modal", 5, 5, "The pitch must be at least 2 microns."),
        ("inline_command", "prose.inline_code_command", 5, 5, "define_pdn_grid"),
        ("codeblock", "structure.code_fence", 7, 9, "define_pdn_grid -name core -pitch 10"),
        (
            "table",
            "structure.table",
            13,
            15,
            "| Switch | Description |\n| --- | --- |\n| `-name` | Name of the grid, see `add_pdn_stripe`. |",
        ),
        ("inline_command", "table.inline_code_command", 15, 15, "add_pdn_stripe"),
        ("diagnostic", "diagnostic.message_id", 17, 17, "If the grid is empty the tool reports PDN-0042 and stops."),
        ("procedure", "structure.ordered_list", 19, 20, "1. Read the design.\n2. Run `define_pdn_grid`."),
        ("inline_command", "procedure.inline_code_command", 20, 20, "define_pdn_grid"),
        ("text", "prose.untyped_sentences", 22, 22, "The grid is written to results/grid.def for later steps."),
        ("file", "prose.file_name", 22, 22, "results/grid.def"),
        ("figure", "structure.image", 24, 24, "Grid view (img/grid.png)"),
    ]
    command_section = ["Grid Tool", "define_pdn_grid"]
    assert [a["section_path"] for a in artifacts[:4]] == [command_section] * 4
    assert all(a["section_path"] == [*command_section, "Options"] for a in artifacts[4:])
    assert all(a["document"] == "grid.md" and a["page"] is None for a in artifacts)
    assert {a["artifact_type"] for a in artifacts} <= set(ARTIFACT_TYPES)
    assert len({a["artifact_id"] for a in artifacts}) == len(artifacts)


READ = """\
# Reading designs

## The `read_def` command

Use `read_def` to load a design. ERROR: the file must exist.
Then, check the log.

```tcl
# load the floorplan
read_def -floorplan_initialize results/floorplan.def
```

> **Warning:** Keep a backup of the design.

```{warning}
Do not edit the file by hand.
```

See https://example.com/doc.pdf and [the guide](guide.md) for setup.tcl details.
"""


def test_artifacts_heading_code_files_admonitions_exact() -> None:
    assert brief(extract_artifacts(blocks_of(READ))) == [
        ("inline_command", "heading.inline_code_command", 3, 3, "read_def"),
        ("text", "prose.untyped_sentences", 5, 5, "Use `read_def` to load a design."),
        ("diagnostic", "diagnostic.severity_prefix", 5, 5, "ERROR: the file must exist."),
        ("procedure", "procedure.sequence", 6, 6, "Then, check the log."),
        ("inline_command", "prose.inline_code_command", 5, 5, "read_def"),
        (
            "codeblock",
            "structure.code_fence",
            8,
            11,
            "# load the floorplan\nread_def -floorplan_initialize results/floorplan.def",
        ),
        ("file", "code.file_argument", 8, 11, "results/floorplan.def"),
        ("constraint", "constraint.admonition_warning", 13, 13, "> **Warning:** Keep a backup of the design."),
        ("constraint", "constraint.admonition_warning", 15, 15, "Do not edit the file by hand."),
        # URLs and Markdown link targets are not file mentions
        (
            "text",
            "prose.untyped_sentences",
            19,
            19,
            "See https://example.com/doc.pdf and [the guide](guide.md) for setup.tcl details.",
        ),
        ("file", "prose.file_name", 19, 19, "setup.tcl"),
    ]


def test_consecutive_sentences_of_one_type_form_one_artifact() -> None:
    src = "# A\n\nIt must be 1.\nIt cannot be 2.\nPlain words here.\nMore plain words.\n"
    assert brief(extract_artifacts(blocks_of(src))) == [
        ("constraint", "constraint.modal", 3, 4, "It must be 1.\nIt cannot be 2."),
        ("text", "prose.untyped_sentences", 5, 6, "Plain words here.\nMore plain words."),
    ]


def test_duplicate_contents_get_distinct_ids() -> None:
    artifacts = extract_artifacts(blocks_of("# A\n\nSame words.\n\n# B\n\nSame words.\n"))
    assert [a["content"] for a in artifacts] == ["Same words.", "Same words."]
    assert artifacts[0]["artifact_id"] != artifacts[1]["artifact_id"]


def test_no_blocks_no_artifacts() -> None:
    assert extract_artifacts([]) == []


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        ("define_pdn_grid -name x", "define_pdn_grid"),
        ("set_wire_rc", "set_wire_rc"),
        ("report_checks()", "report_checks"),
        ("global_route;", "global_route"),
        ("ls -la", None),  # no underscore: not a command
        ("Define_Grid", None),  # commands are lower snake_case
        ("foo", None),
        ("-name", None),
        ("design.def", None),
        ("", None),
        ("   ", None),
    ],
)
def test_command_name(span: str, expected: str | None) -> None:
    assert command_name(span) == expected


# --- lexical patterns --------------------------------------------------------------------


def test_split_sentences() -> None:
    text = "First one. Second `cmd` here! Third?\nfourth line\n\n- item a\n- item b. More"
    assert split_sentences(text) == [
        "First one.",
        "Second `cmd` here!",
        "Third?\nfourth line",
        "- item a",
        "- item b.",
        "More",
    ]


def test_inline_code_spans_and_file_names() -> None:
    assert inline_code_spans("Use `a_b` and ``c_d -x`` and ` ` here") == ["a_b", "c_d -x"]
    assert file_names(
        "Load design.v and ./lib/x.lib, not https://a.b/c.def or [x](y.lef); also run.tcl."
    ) == ["design.v", "./lib/x.lib", "run.tcl"]


# --- semantic rules ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("The tool reports GRT-0243 when congestion is high.", ("diagnostic", "diagnostic.message_id")),
        ("ERROR: the grid is empty.", ("diagnostic", "diagnostic.severity_prefix")),
        ("[WARNING] check this", ("diagnostic", "diagnostic.severity_prefix")),
        ("Warning: the layer is unknown.", ("diagnostic", "diagnostic.severity_prefix")),
        # message id wins over the severity prefix and the modal
        ("[ERROR GRT-0001] the net must be routed", ("diagnostic", "diagnostic.message_id")),
        # diagnostic wins over constraint
        ("ERROR: the file must exist.", ("diagnostic", "diagnostic.severity_prefix")),
        ("The pitch must be at least 2 microns.", ("constraint", "constraint.modal")),
        ("Values between 1 and 16 are allowed.", ("constraint", "constraint.modal")),
        ("Do not exceed 16 cuts.", ("constraint", "constraint.modal")),
        ("The option overrides the default.", ("constraint", "constraint.modal")),
        ("The -x and -y options are mutually exclusive.", ("constraint", "constraint.modal")),
        # constraint wins over procedure
        ("First set the layer, then the width must be given.", ("constraint", "constraint.modal")),
        ("First read the LEF, then read the DEF.", ("procedure", "procedure.sequence")),
        ("Then, run global routing.", ("procedure", "procedure.sequence")),
        ("Step 3 places the macros.", ("procedure", "procedure.sequence")),
        ("Run it before running detailed placement.", ("procedure", "procedure.sequence")),
        ("The tool builds the grid.", None),
        ("The musty room has a mustache.", None),  # word boundaries
    ],
)
def test_classify_sentence(sentence: str, expected: tuple[str, str] | None) -> None:
    assert classify_sentence(sentence) == expected


def test_offline_semantic_spans_groups_consecutive_sentences() -> None:
    sentences = [
        {"id": "s0", "text": "It must be 1."},
        {"id": "s1", "text": "It cannot be 2."},
        {"id": "s2", "text": "Plain."},
        {"id": "s3", "text": "See PDN-0001."},
        {"id": "s4", "text": "It must be 3."},
    ]
    spans, rules = offline_semantic_spans(sentences)
    assert spans == SemanticSpans(
        spans=[
            SemanticSpan(sentence_ids=["s0", "s1"], artifact_type="constraint"),
            SemanticSpan(sentence_ids=["s3"], artifact_type="diagnostic"),
            SemanticSpan(sentence_ids=["s4"], artifact_type="constraint"),
        ]
    )
    assert rules == {
        "s0": "constraint.modal",
        "s1": "constraint.modal",
        "s3": "diagnostic.message_id",
        "s4": "constraint.modal",
    }


def test_validate_spans_rejects_unknown_sentence_ids() -> None:
    spans = SemanticSpans(spans=[SemanticSpan(sentence_ids=["s0", "s9"], artifact_type="procedure")])
    validate_spans(SemanticSpans(spans=[SemanticSpan(sentence_ids=["s0"], artifact_type="procedure")]), ["s0"])
    with pytest.raises(ValueError, match="unknown sentence ids"):
        validate_spans(spans, ["s0", "s1"])


# --- anchors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("`Define_PDN_Grid()`", "define_pdn_grid"),  # the docstring's first example
        ("'global_route'", "global_route"),
        ("[detailed_route]", "detailed_route"),
        ("set_wire_rc -signal -layer M2", "set_wire_rc"),
        ("  `report_checks()` ", "report_checks"),
        ("results/grid.def", "grid.def"),  # files by basename
        ("./results/floorplan.def", "floorplan.def"),
        ("{my.lef}", "my.lef"),
        ("", ""),
    ],
)
def test_normalise_anchor(raw: str, expected: str) -> None:
    assert normalise_anchor(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("./results/Floorplan.DEF", "floorplan.def"),  # the docstring's second example
        ("/abs/path/Top.v", "top.v"),
    ],
)
def test_normalise_anchor_basename_of_any_file_path(raw: str, expected: str) -> None:
    assert normalise_anchor(raw) == expected


@pytest.mark.parametrize(
    "anchor",
    ["<file>", "<design>.def", "foo", "design.def", "my_design.v", "$var", "${top}", "...", "*.lef",
     "results.def", "top.v", ""],
)
def test_placeholders(anchor: str) -> None:
    assert is_placeholder(anchor)
    assert rejection_reason(anchor) == "placeholder_anchor"


@pytest.mark.parametrize(
    "anchor", ["define_pdn_grid", "floorplan.def", "floorplan", "global_route", "sky130.lef"]
)
def test_real_anchors(anchor: str) -> None:
    assert not is_placeholder(anchor)
    assert rejection_reason(anchor) is None


@pytest.mark.parametrize("word", ["int", "string", "list", "proc", "import", "puts", "foreach"])
def test_language_words_are_rejected(word: str) -> None:
    assert not is_placeholder(word)
    assert rejection_reason(word) == "language_type_alias"


def art(artifact_type: str, content: str) -> dict[str, Any]:
    return {"artifact_type": artifact_type, "content": content}


def test_choose_anchor_rule_1_first_command_of_first_code_block() -> None:
    arts = [
        art("inline_command", "report_checks"),
        art("codeblock", "# comment\nset x 1\nlimit = 4\ndefine_pdn_grid -name a\nadd_pdn_stripe"),
        art("codeblock", "global_route"),
    ]
    assert choose_anchor(arts, ["Tool", "set_wire_rc"]) == ("define_pdn_grid", "command", "code.first_command")


def test_choose_anchor_skips_code_whose_command_is_a_placeholder() -> None:
    arts = [art("codeblock", "my_design -x 1"), art("codeblock", "puts hi\nread_lef tech.lef")]
    assert choose_anchor(arts, ["Tool"]) == ("read_lef", "command", "code.first_command")


def test_choose_anchor_rule_2_heading_command() -> None:
    arts = [art("codeblock", "ls -la"), art("inline_command", "report_checks")]
    assert choose_anchor(arts, ["Tool", "Using Set_Up and set_wire_rc"]) == (
        "set_wire_rc",
        "command",
        "heading.command",
    )


def test_choose_anchor_rule_3_most_frequent_inline_command() -> None:
    arts = [
        art("inline_command", "read_def -x"),
        art("inline_command", "global_route"),
        art("inline_command", "global_route -verbose"),
        art("file", "a.def"),
    ]
    assert choose_anchor(arts, ["Tool", "Routing"]) == ("global_route", "command", "mentions.most_frequent_command")
    ties = [art("inline_command", "read_def"), art("inline_command", "read_lef")]
    assert choose_anchor(ties, ["Tool"]) == ("read_def", "command", "mentions.most_frequent_command")


def test_choose_anchor_rule_4_first_file() -> None:
    arts = [art("text", "words"), art("file", "results/Floorplan.def"), art("file", "b.lef")]
    assert choose_anchor(arts, ["Files"]) == ("floorplan.def", "file", "mentions.file")


def test_choose_anchor_rule_5_section() -> None:
    assert choose_anchor([art("text", "words")], ["Tool", "Overview"]) == (
        "section:Tool > Overview",
        "section",
        "section",
    )
    assert choose_anchor([], []) == ("section:", "section", "section")


# --- occurrences -------------------------------------------------------------------------


def test_grouping_section_drops_trailing_generic_headings() -> None:
    assert grouping_section(["Tool", "read_def", "Options"]) == ("Tool", "read_def")
    assert grouping_section(["Tool", "read_def", "Example", "`Options`"]) == ("Tool", "read_def")
    assert grouping_section(["Examples"]) == ("Examples",)  # never empties the path
    assert grouping_section(["Tool", "Options", "read_def"]) == ("Tool", "Options", "read_def")


def test_generic_subheadings_merge_into_the_parent_section() -> None:
    occurrences = pipeline(GRID, "grid.md")[3]
    assert [(o["anchor"], o["anchor_kind"], o["anchor_rule"], o["section_path"], o["line_spans"]) for o in occurrences] == [
        # synopsis, code and the Options table are one event; the short diagnostic joins it
        ("define_pdn_grid", "command", "code.first_command", ["Grid Tool", "define_pdn_grid"],
         [[5, 5], [7, 9], [13, 15], [17, 17]]),
        # the ordered procedure is a second boundary: a second event, in the same section
        ("define_pdn_grid", "command", "heading.command", ["Grid Tool", "define_pdn_grid"],
         [[19, 20], [22, 22], [24, 24]]),
    ]
    assert occurrences[0]["artifact_types"] == ["codeblock", "constraint", "diagnostic", "inline_command", "table", "text"]
    assert occurrences[1]["artifact_types"] == ["figure", "file", "inline_command", "procedure", "text"]


TWO_EXAMPLES = """\
# Flow

## Running the flow

The flow reads the technology first and routes the design at the end of the run.

```tcl
read_lef tech.lef
```

The second example routes every signal net of the design after placement is done.

```tcl
global_route -verbose
```
"""


def test_two_code_blocks_in_one_section_are_two_occurrences() -> None:
    _, artifacts, _, occurrences = pipeline(TWO_EXAMPLES, min_chars=0)
    assert [(o["anchor"], o["anchor_rule"]) for o in occurrences] == [
        ("read_lef", "code.first_command"),
        ("global_route", "code.first_command"),
    ]
    by_id = {a["artifact_id"]: a for a in artifacts}
    for occ in occurrences:
        assert [by_id[a]["artifact_type"] for a in occ["artifact_ids"]].count("codeblock") == 1
        assert occ["section_path"] == ["Flow", "Running the flow"]


def test_short_occurrences_merge_into_the_previous_one() -> None:
    _, _, _, occurrences = pipeline(TWO_EXAMPLES)  # default min_chars=120: the 2nd is short
    assert len(occurrences) == 1
    assert occurrences[0]["anchor"] == "read_lef"
    assert occurrences[0]["line_spans"] == [[5, 5], [7, 9], [11, 11], [13, 15]]


def test_a_short_first_occurrence_merges_into_the_next_one() -> None:
    src = "# A\n\n## Intro\n\nShort.\n\n## read_def\n\n" + "Long words about reading designs. " * 5 + "\n"
    _, _, _, occurrences = pipeline(src)
    assert len(occurrences) == 1
    assert occurrences[0]["line_spans"] == [[5, 5], [9, 9]]
    assert occurrences[0]["section_path"] == ["A", "Intro"]  # the section of its first block


def check_document(blocks: Rows, artifacts: Rows, chunks: Rows, occurrences: Rows, n_lines: int) -> None:
    """The invariants every document must satisfy."""
    chunk_ids = {c["chunk_id"] for c in chunks}
    artifact_ids = [a["artifact_id"] for a in artifacts]
    for occ in occurrences:
        assert occ["artifact_ids"], occ
        assert occ["chunk_ids"], occ
        assert set(occ["chunk_ids"]) <= chunk_ids
        assert occ["artifact_types"] == sorted({a["artifact_type"] for a in artifacts if a["artifact_id"] in occ["artifact_ids"]})
    # every artifact belongs to exactly one occurrence
    assert sorted(a for o in occurrences for a in o["artifact_ids"]) == sorted(artifact_ids)
    assert len({o["occurrence_id"] for o in occurrences}) == len(occurrences)
    b, a, c, o = (frame(blocks, BLOCKS_SCHEMA), frame(artifacts, ARTIFACTS_SCHEMA),
                  frame(chunks, CHUNKS_SCHEMA), frame(occurrences, OCCURRENCES_SCHEMA))
    assert structure.block_problems(b, n_lines) == []
    assert structure.artifact_problems(a, n_lines) == []
    assert structure.chunk_problems(c, n_lines) == []
    assert structure.occurrence_problems(o, a, c) == []


@pytest.mark.parametrize("path", sorted(SAMPLE_DIR.glob("*.md")), ids=lambda p: p.name)
def test_sample_documents_satisfy_the_invariants(path: Path) -> None:
    doc, blocks = parse_markdown(path.read_bytes(), path.name)
    artifacts = extract_artifacts(blocks)
    chunks = build_chunks(blocks)
    occurrences = build_occurrences(blocks, artifacts, chunks)
    assert occurrences
    check_document(blocks, artifacts, chunks, occurrences, doc["n_lines"])


@pytest.mark.parametrize("src", [GRID, READ, TWO_EXAMPLES])
def test_small_documents_satisfy_the_invariants(src: str) -> None:
    doc, blocks = parse_markdown(src.encode(), "t.md")
    artifacts = extract_artifacts(blocks)
    chunks = build_chunks(blocks)
    check_document(blocks, artifacts, chunks, build_occurrences(blocks, artifacts, chunks), doc["n_lines"])


# --- chunks ------------------------------------------------------------------------------


def same_lines(chunk: dict[str, Any], source: str, blocks: Rows) -> None:
    """Chunk text is the file's lines [start, end]: every line inside a block is identical,
    lines between blocks (blank lines, rules, comments) may appear as empty lines."""
    in_block = {n for b in blocks for n in range(b["start_line"], b["end_line"] + 1)}
    file_lines = source.split("\n")[chunk["start_line"] - 1 : chunk["end_line"]]
    text_lines = chunk["text"].split("\n")
    assert len(text_lines) == len(file_lines), chunk
    for number, got, want in zip(range(chunk["start_line"], chunk["end_line"] + 1), text_lines, file_lines, strict=True):
        if number in in_block:
            assert got == want, (number, got, want)
        else:
            assert got in ("", want), (number, got, want)


@pytest.mark.parametrize("path", sorted(SAMPLE_DIR.glob("*.md")), ids=lambda p: p.name)
def test_chunk_text_is_the_source_lines(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    blocks = blocks_of(source, path.name)
    chunks = build_chunks(blocks)
    assert chunks
    for chunk in chunks:
        same_lines(chunk, source, blocks)
        assert chunk["n_tokens"] == approx_tokens(chunk["text"]) == math.ceil(len(chunk["text"]) / 4)
        # The encoders see the section path and the blocks' content (no heading / fence markup).
        heading = " > ".join(chunk["section_path"])
        body = "\n".join(
            b["text"] for b in blocks if b["block_id"] in chunk["block_ids"] and b["kind"] != "heading"
        )
        if all(b["block_id"] not in chunk["block_ids"] or len(b["text"]) < 1600 for b in blocks):
            assert chunk["embed_text"] == (f"{heading}\n{body}" if heading else body)
        assert "```" not in chunk["embed_text"] and "~~~" not in chunk["embed_text"]
    assert [c["ordinal"] for c in chunks] == list(range(len(chunks)))
    # chunks cover the blocks in order, without overlapping
    ends = [(c["start_line"], c["end_line"]) for c in chunks]
    assert all(a[1] < b[0] for a, b in pairwise(ends))


def test_chunks_start_at_headings() -> None:
    chunks = build_chunks(blocks_of(GRID))
    assert [(c["start_line"], c["end_line"], c["section_path"]) for c in chunks] == [
        (1, 1, ["Grid Tool"]),
        (3, 9, ["Grid Tool", "define_pdn_grid"]),
        (11, 24, ["Grid Tool", "define_pdn_grid", "Options"]),
    ]
    assert chunks[1]["text"] == "\n".join(GRID.split("\n")[2:9])


def test_a_table_is_never_split() -> None:
    rows = "\n".join(f"| `-opt{i}` | Description of option number {i} in words. |" for i in range(40))
    src = f"# T\n\n## Opts\n\n| Switch | Description |\n| --- | --- |\n{rows}\n\nAfter table.\n"
    blocks = blocks_of(src)
    table = next(b for b in blocks if b["kind"] == "table")
    assert approx_tokens(table["text"]) > 4 * 100
    chunks = build_chunks(blocks, max_tokens=100)
    holding = [c for c in chunks if table["block_id"] in c["block_ids"]]
    assert len(holding) == 1
    assert (holding[0]["start_line"], holding[0]["end_line"]) == (3, 46)
    assert table["raw"] in holding[0]["text"]
    for chunk in chunks:
        same_lines(chunk, src, blocks)


def test_long_prose_splits_at_sentence_ending_lines() -> None:
    lines = []
    for i in range(30):
        lines.append(f"Sentence number {i} talks about the grid and the straps in")
        lines.append(f"some detail, with words to fill the line {i}.")
    src = "# T\n\n" + "\n".join(lines) + "\n"
    blocks = blocks_of(src)
    chunks = build_chunks(blocks, max_tokens=100)
    assert len(chunks) == 8
    paragraph = blocks[1]["block_id"]
    assert all(paragraph in c["block_ids"] for c in chunks)
    for chunk in chunks:
        same_lines(chunk, src, blocks)
        assert chunk["text"].endswith(".")  # never cut inside a sentence
        assert chunk["n_tokens"] <= 100 * 1.5
    # consecutive, gap-free parts of the paragraph
    assert chunks[0]["start_line"] == 1
    assert all(a["end_line"] + 1 == b["start_line"] for a, b in pairwise(chunks))
    assert chunks[-1]["end_line"] == 62
    assert block_chunk_map(chunks)[paragraph] == [c["chunk_id"] for c in chunks]


def test_long_code_splits_at_line_boundaries_without_fences_in_ids() -> None:
    body = "\n".join(f"set_cmd_{i} -value {i}" for i in range(200))
    backtick = build_chunks(blocks_of(f"# T\n\n```tcl\n{body}\n```\n"), max_tokens=100)
    tilde = build_chunks(blocks_of(f"# T\n\n~~~tcl\n{body}\n~~~\n"), max_tokens=100)
    assert len(backtick) > 5
    assert [c["chunk_id"] for c in backtick] == [c["chunk_id"] for c in tilde]


EQUIVALENT = {
    "original": "# T\n\n## read_def\n\nReads a DEF file.\n\n```tcl\nread_def design.def\n```\n\n"
    "| A | B |\n| --- | --- |\n| 1 | 2 |\n",
    "blank lines, closing hashes and tilde fences": "# T ##\n\n\n\n## read_def ##\n\n\nReads a DEF file.\n\n\n"
    "~~~tcl\nread_def design.def\n~~~\n\n\n| A | B |\n| --- | --- |\n| 1 | 2 |\n",
}


def test_chunk_ids_survive_formatting_changes() -> None:
    original = pipeline(EQUIVALENT["original"])
    variant = pipeline(EQUIVALENT["blank lines, closing hashes and tilde fences"])
    assert [c["chunk_id"] for c in original[2]] == [c["chunk_id"] for c in variant[2]]
    assert [c["start_line"] for c in original[2]] != [c["start_line"] for c in variant[2]]
    # block, artifact and occurrence ids too; the tables hash the same semantically
    for i, schema in ((0, BLOCKS_SCHEMA), (1, ARTIFACTS_SCHEMA), (3, OCCURRENCES_SCHEMA)):
        id_column = next(iter(schema))
        assert [r[id_column] for r in original[i]] == [r[id_column] for r in variant[i]]
        a, b = frame(original[i], schema), frame(variant[i], schema)
        assert semantic_hash(a) == semantic_hash(b)
        assert content_hash(a) != content_hash(b)  # line numbers moved


def test_build_chunks_of_nothing() -> None:
    assert build_chunks([]) == []
    assert build_occurrences([], [], []) == []


# --- table hashes ------------------------------------------------------------------------


def test_content_hash_is_independent_of_row_and_column_order() -> None:
    df = frame(extract_artifacts(blocks_of(GRID)), ARTIFACTS_SCHEMA)
    assert content_hash(df) == content_hash(df.reverse())
    assert content_hash(df) == content_hash(df.sample(fraction=1.0, shuffle=True, seed=7))
    assert content_hash(df) == content_hash(df.select(sorted(df.columns, reverse=True)))
    assert semantic_hash(df) == semantic_hash(df.reverse())


def test_content_hash_sees_every_value() -> None:
    df = frame(extract_artifacts(blocks_of(GRID)), ARTIFACTS_SCHEMA)
    changed = df.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("x")).otherwise(pl.col("rule")).alias("rule"))
    assert content_hash(df) != content_hash(changed)
    assert semantic_hash(df) != semantic_hash(changed)
    assert content_hash(df) != content_hash(df.head(df.height - 1))


def test_content_hash_sees_every_vector_component() -> None:
    """Embedding columns (fixed-width arrays) are hashed from their matrix: one component
    moved by one float32 step changes the hash, row order does not, a table of vectors alone
    still hashes its rows, and NaN or missing vectors hash."""
    import numpy as np

    from edaqa_pipeline.retrieval.embedder import vector_series

    vectors = np.random.default_rng(0).normal(size=(5, 384)).astype(np.float32)
    df = pl.DataFrame({"item_id": list("abcde")}).with_columns(vector_series("vector", vectors, 384))
    nudged = vectors.copy()
    nudged[3, 200] = np.nextafter(nudged[3, 200], np.float32(10))
    other = df.with_columns(vector_series("vector", nudged, 384))
    assert content_hash(df) == content_hash(df.reverse())
    assert content_hash(df) != content_hash(other) and semantic_hash(df) != semantic_hash(other)
    alone, alone_other = df.select("vector"), other.select("vector")
    assert content_hash(alone) != content_hash(alone_other) != content_hash(alone.head(0))
    gaps = pl.DataFrame({"item_id": ["a", "b", "c"], "vector": [[0.5, float("nan")], None, [0.5, 1.0]]},
                        schema={"item_id": pl.String(), "vector": pl.Array(pl.Float32(), 2)})
    assert content_hash(gaps) == content_hash(gaps.reverse())
    assert content_hash(gaps) != content_hash(gaps.head(2))


def test_hash_tells_nan_from_null_and_normalises_nested_strings() -> None:
    """Rows are serialised as JSON by Polars, which writes NaN as null: floats are spelled out
    first, in lists too. The semantic hash normalises whitespace in strings at any depth (an
    element's ``out_edges`` are a list of structs)."""
    schema = {"x": pl.Float64(), "xs": pl.List(pl.Float64()), "tags": pl.List(pl.String()),
              "edges": pl.List(pl.Struct({"dst": pl.String(), "relation": pl.String()}))}
    base = {"x": 1.5, "xs": [1.0, 2.0], "tags": ["a b"], "edges": [{"dst": "e 1", "relation": "next"}]}

    def table(**changes: object) -> pl.DataFrame:
        return pl.DataFrame([{**base, **changes}], schema=schema)

    assert content_hash(table(x=float("nan"))) != content_hash(table(x=None))
    assert content_hash(table(xs=[1.0, float("nan")])) != content_hash(table(xs=[1.0, None]))
    assert content_hash(table(x=1.5)) != content_hash(table(x=1.25))
    spaced = table(tags=["a \n  b"], edges=[{"dst": " e\t1 ", "relation": "next"}])
    assert content_hash(spaced) != content_hash(table())
    assert semantic_hash(spaced) == semantic_hash(table())
    assert semantic_hash(table(edges=[{"dst": "e 2", "relation": "next"}])) != semantic_hash(table())


def test_hash_keeps_apart_what_json_would_merge() -> None:
    """A missing struct is not a struct of nulls (in a list too), struct fields count in name
    order, a null vector component is not NaN, a float inside an array keeps its NaN, bytes
    hash, and the whitespace rule is ``normalise_ws``'s (Python's ``\\s`` includes \\x1f)."""
    edge = pl.Struct({"dst": pl.String(), "relation": pl.String()})
    one = pl.DataFrame({"e": [None]}, schema={"e": edge})
    nulls = pl.DataFrame({"e": [{"dst": None, "relation": None}]}, schema={"e": edge})
    assert content_hash(one) != content_hash(nulls)
    listed = {"e": pl.List(edge)}
    assert content_hash(pl.DataFrame({"e": [[None]]}, schema=listed)) != content_hash(
        pl.DataFrame({"e": [[{"dst": None, "relation": None}]]}, schema=listed))
    ab = pl.DataFrame({"s": [{"a": 1, "b": 2}]})
    ba = pl.DataFrame({"s": [{"b": 2, "a": 1}]})
    assert content_hash(ab) == content_hash(ba)
    vec = {"v": pl.Array(pl.Float32(), 2)}
    assert content_hash(pl.DataFrame({"v": [[None, 1.0]]}, schema=vec)) != content_hash(
        pl.DataFrame({"v": [[float("nan"), 1.0]]}, schema=vec))
    nested = {"v": pl.List(pl.Array(pl.Float64(), 2))}
    assert content_hash(pl.DataFrame({"v": [[[float("nan"), 1.0]]]}, schema=nested)) != content_hash(
        pl.DataFrame({"v": [[[None, 1.0]]]}, schema=nested))
    assert content_hash(pl.DataFrame({"b": [b"\x00"]})) != content_hash(pl.DataFrame({"b": [b"\x01"]}))
    assert normalise_ws("a\x1fb") == "a b"
    assert semantic_hash(pl.DataFrame({"t": ["a\x1fb"]})) == semantic_hash(pl.DataFrame({"t": ["a b"]}))


def test_hashes_of_parts_equal_the_hashes_of_the_whole_table() -> None:
    """The manifest hashes a per-document table a group of partitions at a time: the same
    figures as the concatenated table, whatever the split (empty parts included)."""
    import edaqa_pipeline.storage.hashing as hashing

    df = frame(extract_artifacts(blocks_of(GRID)), ARTIFACTS_SCHEMA)
    whole = {"rows": df.height, "content_hash": content_hash(df), "semantic_hash": semantic_hash(df)}
    assert df.height >= 3
    parts = [df.slice(0, 1), df.clear(), df.slice(1, 1), df.slice(2)]
    assert hashing.summary_of_parts(parts) == whole
    assert hashing.summary_of_parts(reversed(parts)) == whole
    assert hashing.summary_of_parts([df.clear()])["content_hash"] == content_hash(df.clear())
    assert hashing.summary_of_parts([]) is None
    with pytest.raises(ValueError, match="different columns"):
        hashing.summary_of_parts([df, df.drop("rule")])
    rows_at_once = hashing.SLICE_ROWS
    try:  # rows are serialised a slice at a time: the slice size changes nothing
        hashing.SLICE_ROWS = 1
        assert (content_hash(df), semantic_hash(df)) == (whole["content_hash"], whole["semantic_hash"])
    finally:
        hashing.SLICE_ROWS = rows_at_once


def test_semantic_hash_ignores_line_numbers_and_whitespace() -> None:
    df = frame(extract_artifacts(blocks_of(GRID)), ARTIFACTS_SCHEMA)
    moved = df.with_columns(pl.col("start_line") + 10, pl.col("end_line") + 10)
    spaced = df.with_columns(pl.col("content").str.replace_all(" ", "  \n "))
    assert content_hash(moved) != content_hash(df)
    assert content_hash(spaced) != content_hash(df)
    assert semantic_hash(moved) == semantic_hash(spaced) == semantic_hash(df)


def test_hashes_of_empty_tables() -> None:
    empty = frame([], ARTIFACTS_SCHEMA)
    assert content_hash(empty) == content_hash(frame([], ARTIFACTS_SCHEMA))
    assert content_hash(empty) != content_hash(frame([], CHUNKS_SCHEMA))  # columns count
