"""What changed in the CTS manual between the two OpenROAD releases of ../shared/corpus, as
``graphs/release_changes.py`` finds it from the element rows of each (parsed here, without
an index), held against the lines of the manuals themselves."""

from __future__ import annotations

from typing import Any

import pytest

from edaqa_pipeline.graphs.elements.document_graph import build_document
from edaqa_pipeline.graphs.release_changes import DEFAULT, compare, stated
from edaqa_pipeline.parsing.documents import parse_file
from edaqa_pipeline_tests.fixtures_index import SHARED

CORPORA = SHARED / "corpus"
RELEASES = ("openroad-2024", "openroad")


def _rows(release: str, name: str = "cts.md") -> list[dict[str, Any]]:
    _, blocks = parse_file(CORPORA / release / name, f"{release}/{name}")
    return build_document(blocks)[0]


def _line(release: str, number: int, name: str = "cts.md") -> str:
    return (CORPORA / release / name).read_text().split("\n")[number - 1]


def _changes(name: str) -> dict[tuple[str, str], dict[str, Any]]:
    if not (CORPORA / "openroad" / name).is_file():
        pytest.skip(f"{CORPORA} does not hold the OpenROAD manuals")
    changes = compare(_rows(RELEASES[0], name), _rows(RELEASES[1], name), RELEASES)
    return {(c["option"] or c["command"], c["kind"]): c for c in changes}


@pytest.fixture(scope="module")
def cts() -> dict[tuple[str, str], dict[str, Any]]:
    return _changes("cts.md")


def test_a_changed_default_cites_both_rows(cts: dict[tuple[str, str], dict[str, Any]]) -> None:
    ndr = cts[("-apply_ndr", "default_changed")]
    assert (ndr["old_value"], ndr["new_value"]) == ("False", "half")
    old, new = _line("openroad-2024", ndr["old_start"]), _line("openroad", ndr["new_start"])
    assert old.startswith("| `-apply_ndr`") and "default value is `False`" in old
    assert new.startswith("| `-apply_ndr`") and "default value is `half`" in new
    gpl = _changes("gpl.md")
    split = gpl[("-max_split_size", "default_changed")]
    assert (split["old_value"], split["new_value"]) == ("250", "500")
    assert "default = 250" in _line("openroad-2024", split["old_start"], "gpl.md")
    assert "default value is 500" in _line("openroad", split["new_start"], "gpl.md")
    pad = gpl[("-pad_left", "values_changed")]
    assert (pad["old_value"], pad["new_value"]) == ("integers [1, MAX_INT]", "integers [0, MAX_INT]")


def test_a_default_one_side_no_longer_states_is_not_a_changed_default(
        cts: dict[tuple[str, str], dict[str, Any]]) -> None:
    """2026 says -sink_clustering_size has no hard default (a cap of 30 applies): the row
    changed, its default did not become 30."""
    assert ("-sink_clustering_size", "default_changed") not in cts
    change = cts[("-sink_clustering_size", "description_changed")]
    assert "default value is `20`" in change["old_text"] and "not used as a hard limit" in change["new_text"]


def test_added_and_removed_options_cite_the_side_that_has_them(cts: dict[tuple[str, str], dict[str, Any]]) -> None:
    added = cts[("-macro_clustering_size", "option_added")]
    assert added["old_doc"] == "" and added["new_doc"] == "openroad/cts.md"
    assert _line("openroad", added["new_start"]).startswith("| `-macro_clustering_size`")
    removed = cts[("-insertion_delay", "option_removed")]
    assert removed["new_doc"] == "" and _line("openroad-2024", removed["old_start"]).startswith("| `-insertion_delay`")
    command = cts[("set_cts_config", "command_added")]
    assert command["new_doc"] == "openroad/cts.md" and "Set CTS configuration" in command["new_text"]


def test_an_unchanged_option_gets_no_change(cts: dict[tuple[str, str], dict[str, Any]]) -> None:
    assert not [kind for (name, kind) in cts if name in ("-max_slew", "-wire_unit", "-root_buffer")]
    same = compare(_rows(RELEASES[0]), _rows(RELEASES[0]), RELEASES)
    assert same == []  # a release against itself: nothing changed


@pytest.mark.parametrize(("text", "value"), [
    ("The default value is `50` for FastRoute and `5` when `-use_cugr` is set", "50"),
    ("runtime improvement (default = 250).", "250"),
    ("Maximum split size, default value is 500 (-1 for no decomposition), type `int`.", "500"),
    ("Applies 2X spacing non-default rule to all clock nets.", ""),
    ("The default value is `1.0`, meaning all needed delay buffers are inserted.", "1.0"),
    ("Defaults to `GROUND`.", "GROUND"),
    ('The default value is `"PHY_"`.', "PHY_"),
    ("The default values are `[64, 20]`.", "[64, 20]"),
    ("bounded above by an internal cap (default 30, or the sink buffer max fanout", ""),
    ("The default is to perform pin swap transform during setup fixing.", ""),
])
def test_the_stated_default_is_read_from_the_row(text: str, value: str) -> None:
    assert stated(DEFAULT, text) == value
