"""Extraction layer on small inputs: typed artifacts (exact), the lexical patterns and the
semantic sentence rules. Pure functions only."""

from __future__ import annotations

from typing import Any

import pytest

from edaqa_pipeline.extraction.artifacts import command_name, extract_artifacts
from edaqa_pipeline.extraction.semantic import (
    SemanticSpan,
    SemanticSpans,
    classify_sentence,
    offline_semantic_spans,
    validate_spans,
)
from edaqa_pipeline.model import ARTIFACT_TYPES
from edaqa_pipeline.text.identifiers import file_names, inline_code_spans
from edaqa_pipeline.text.sentences import split_sentences
from edaqa_pipeline_tests._helpers_extraction import GRID, READ, Rows, blocks_of


def brief(artifacts: Rows) -> list[tuple[Any, ...]]:
    return [(a["artifact_type"], a["rule"], a["start_line"], a["end_line"], a["content"]) for a in artifacts]


# --- typed artifacts --------------------------------------------------------------------


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
        # line 16: the line after the admonition's opening fence holds its text
        ("constraint", "constraint.admonition_warning", 16, 16, "Do not edit the file by hand."),
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
