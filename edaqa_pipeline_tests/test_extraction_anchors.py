"""Extraction layer: anchor normalisation, placeholders and the anchor-choice rules.
Pure functions only."""

from __future__ import annotations

from typing import Any

import pytest

from edaqa_pipeline.extraction.anchors import (
    choose_anchor,
    is_placeholder,
    normalise_anchor,
    rejection_reason,
)

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
