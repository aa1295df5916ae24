"""Rejoining words hyphenated at a line end (``parsing.dehyphenation``): the document's own
vocabulary decides between "mea-surements" -> "measurements" and "machine-mode"."""

from __future__ import annotations

import pytest

from edaqa_pipeline.parsing.dehyphenation import join_lines


@pytest.mark.parametrize(("lines", "vocab", "expected"), [
    (["Electrical mea-", "surements are performed"], set(), "Electrical measurements are performed"),
    (["a machine-", "mode register"], {"machine", "mode"}, "a machine-mode register"),
    (["the read-", "modify-write cycle"], {"read-modify"}, "the read-modify-write cycle"),
    (["both halves known but the word too: pro-", "cess"], {"pro", "cess", "process"},
     "both halves known but the word too: process"),
    (["VDD = 1.8 V -", "typical"], set(), "VDD = 1.8 V - typical"),
    # an option broken after its dash in a narrow table column
    (["-", "starts_with"], set(), "-starts_with"),
    (["set the -", "sink_clustering_size option"], set(), "set the -sink_clustering_size option"),
    (["[-power_net net] [-", "ground_net net]"], set(), "[-power_net net] [-ground_net net]"),
    (["first line", "", "second line"], set(), "first line second line"),
    # prose and code lines may end in an underscore of their own: not joined outside a cell
    (["the instance -inst _614_", "This command"], set(), "the instance -inst _614_ This command"),
    (["pack bitfields into a flags_", "struct"], set(), "pack bitfields into a flags_ struct"),
])
def test_join_lines(lines: list[str], vocab: set[str], expected: str) -> None:
    assert join_lines(lines, vocab) == expected


@pytest.mark.parametrize(("lines", "expected"), [
    # a long name broken after an underscore to fit a narrow column, more than once
    (["-branching_point_", "buffers_distance"], "-branching_point_buffers_distance"),
    (["-sink_", "clustering_", "max_diameter value"], "-sink_clustering_max_diameter value"),
    (["a trailing _", "is kept apart"], "a trailing _ is kept apart"),
    (["ends in name_", "(see below)"], "ends in name_ (see below)"),
    (["member _614_", "This row"], "member _614_ This row"),
])
def test_join_cell_lines(lines: list[str], expected: str) -> None:
    assert join_lines(lines, set(), cell=True) == expected
