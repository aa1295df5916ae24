"""The claim verifier accepts what one unit of the cited evidence states and rejects the rest.

A fixed sample: every claim ``benchmarks/verify_claims.py`` derives from the repository's
sample corpus (its manuals and its datasheet PDF, parsed and chunked as ``edaqa index``
does), true ones and their tampered variants (a neighbouring row's value or option, another
command's option, a digit changed, the unit changed). The figures the benchmark prints for the
real corpora are in docs/answers.md."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from edaqa_pipeline.generation.units import text_units
from edaqa_pipeline.generation.verify import verify_claim
from edaqa_pipeline.parsing.lines import markdown_line_kinds

REPO = Path(__file__).resolve().parents[1]


def _benchmark():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("verify_claims", REPO / "benchmarks" / "verify_claims.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules.setdefault("verify_claims", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def judged():  # type: ignore[no-untyped-def]
    bench = _benchmark()
    chunks = bench.parse_chunks(REPO / "data" / "sample")
    claims = list(bench.claims_of("sample", chunks, bench.commands_of(chunks)))
    return bench.evaluate(claims, {"sample": chunks})


def test_true_claims_are_accepted_and_tampered_ones_rejected(judged) -> None:  # type: ignore[no-untyped-def]
    true = [ok for claim, ok, _ in judged if not claim.tamper]
    tampered = [ok for claim, ok, _ in judged if claim.tamper]
    assert len(true) >= 150 and len(tampered) >= 250
    assert sum(true) / len(true) >= 0.95
    assert 1 - sum(tampered) / len(tampered) >= 0.99
    kinds = {claim.tamper for claim, _, _ in judged if claim.tamper}
    assert kinds == {"neighbour_value", "neighbour_option", "other_command", "digit", "unit", "sign", "prefix"}
    for kind in ("sign", "prefix"):  # the sample datasheet's negative values and prefixed units
        assert not any(ok for claim, ok, _ in judged if claim.tamper == kind), kind
    assert {claim.kind for claim, _, _ in judged} == {"default", "meaning", "synopsis", "property"}


CTS = """### clock_tree_synthesis

```tcl
clock_tree_synthesis
    [-sink_clustering_size cluster_size]
    [-sink_clustering_max_diameter max_diameter]
```

#### Options

| Switch Name | Description |
| ----- | ----- |
| `-sink_clustering_size` | Specifies the maximum number of sinks per cluster. The default value is `20`, and the allowed values are integers `[0, MAX_INT]`. |
| `-sink_clustering_max_diameter` | Specifies maximum diameter (in microns) of sink cluster. The default value is `50`, and the allowed values are integers `[0, MAX_INT]`. |
| `-clustering_unbalance_ratio` | A value of `0.5` (i.e., 50%) means each cluster has half of all sinks. The default value is `0.6`. |
"""
TUTORIAL = """```tcl
clock_tree_synthesis -root_buf BUF_X4 \\
                     -wire_unit 20 \\
```"""


@pytest.mark.parametrize(("claim", "verified"), [
    ("The default of -sink_clustering_max_diameter is 50 microns.", True),
    ("The default of `-sink_clustering_size` is `20`.", True),
    ("The maximum number of sinks per cluster of `clock_tree_synthesis` defaults to 20 (`-sink_clustering_size`).", True),
    ("The default of -sink_clustering_max_diameter is 20 microns.", False),  # 20 from the tutorial
    ("-sink_clustering_size is 50", False),  # the neighbouring row's value
    ("The default of -sink_clustering_max_diameter is 50 ns.", False),  # the unit changed
    ("The default of -clustering_unbalance_ratio is 0.5.", False),  # a value of the row, not its default
    ("`repair_timing` takes `-sink_clustering_size`.", False),  # another command
    ("`-r` limits the cluster size.", False),  # not found inside "-ratio"
])
def test_the_verifier_binds_every_term_to_one_unit(claim: str, verified: bool) -> None:
    cited = [("E1", text_units(CTS, markdown_line_kinds(CTS))),
             ("E2", text_units(TUTORIAL, markdown_line_kinds(TUTORIAL)))]
    verdict = verify_claim(claim, cited)
    assert verdict.verified is verified, verdict.reason
    if verified:
        assert len(verdict.bindings) == 1 and verdict.bindings[0].evidence_id == "E1"
    else:
        assert verdict.reason and "\n" not in verdict.reason


PDN = """### define_power_grid

```tcl
define_power_grid -name name [-starts_with POWER|GROUND]
```

| Switch Name | Description |
| --- | --- |
| `-name` | Name of the grid. Required. |
| `-starts_with` | Net of the first rail. Allowed values are `POWER` and `GROUND`. Default: `GROUND`. |
"""


@pytest.mark.parametrize(("claim", "verified", "line"), [
    ("The default of `-starts_with` is `GROUND`.", True, 9),
    ("`-starts_with`: Net of the first rail. Allowed values are `POWER` and `GROUND`. Default: `GROUND`.", True, 9),
    ("define_power_grid -name name [-starts_with POWER|GROUND]", True, 3),
    ("The default of `-starts_with` is `POWER`.", False, None),  # the synopsis lists values, not the default
    ("`-starts_with` defaults to POWER.", False, None),
])
def test_a_synopsis_line_names_values_but_states_no_default(claim: str, verified: bool, line: int | None) -> None:
    """A synopsis naming an option and its allowed values verifies neither value as the
    default; a claim a row and the synopsis both hold is cited by the row it was written from."""
    verdict = verify_claim(claim, [("E1", text_units(PDN, markdown_line_kinds(PDN)))])
    assert verdict.verified is verified, verdict.reason
    if verified:
        (binding,) = verdict.bindings
        assert binding.unit.first == line
    else:
        assert "GROUND" in verdict.reason or "no default" in verdict.reason


@pytest.mark.parametrize(("item", "claim", "verified"), [
    # a list item about one option is one unit: its range and its default stay together
    ("* __verbose_level__ [0-10, int] : Set verbose level. Default: 1",
     "The default of verbose_level is 1.", True),
    # an item naming two options keeps its sentences apart: no number joins the other option
    ("- `-max_fanout` sets the fanout limit. The limit for `-max_cap` is 20.",
     "The fanout limit `-max_fanout` is 20.", False),
])
def test_a_list_item_is_one_unit_only_when_it_is_about_one_thing(item: str, claim: str, verified: bool) -> None:
    units = text_units(item, markdown_line_kinds(item))
    assert verify_claim(claim, [("E1", units)]).verified is verified


ANTENNAS = """### Check Antennas

```tcl
check_antennas
    [-verbose]
    [-net net]
```
"""


@pytest.mark.parametrize(("claim", "verified"), [
    ("`check_antennas` takes the option `-verbose`.", True),
    ("Run `check_antennas -net net` to check one net.", False),  # "check one net": the line states no purpose
    ("`-verbose`: Check antennas on the specified net.", False),  # the heading's words are not the line's
    ("Antennas are checked on the specified net.", False),  # plain words never rest on a code line
])
def test_a_code_line_states_names_and_syntax_not_what_an_option_does(claim: str, verified: bool) -> None:
    """A synopsis line states that a command takes an option, in names; what the option does
    is stated by a sentence or a row, which this item does not have."""
    verdict = verify_claim(claim, [("E1", text_units(ANTENNAS, markdown_line_kinds(ANTENNAS)))])
    assert verdict.verified is verified, verdict.reason


def test_the_sections_command_owns_only_units_that_name_no_command() -> None:
    """Under ``clock_tree_synthesis``'s section, an options row belongs to it; an example line
    or a sentence naming ``global_route`` does not."""
    text = ("| `-verbose` | Prints the tree. |\n"
            "\n"
            "The `global_route` command accepts `-verbose` too.\n"
            "\n"
            "```tcl\nglobal_route -verbose\n```")
    kinds = markdown_line_kinds(text)
    units = text_units(text, kinds, ["clock_tree_synthesis"] * len(kinds))
    for claim, verified in (("`clock_tree_synthesis -verbose` prints the tree.", True),
                            ("`clock_tree_synthesis` accepts `-verbose`.", False),
                            ("`clock_tree_synthesis` takes the option `-verbose`.", False)):
        assert verify_claim(claim, [("E1", units)]).verified is verified, claim
    assert not verify_claim("`clock_tree_synthesis -verbose` prints the tree.",
                            [("E1", text_units(text, kinds))]).verified  # no section command known


def test_the_sections_command_owns_a_sentence_whose_other_name_is_an_options_value() -> None:
    """"This command sets routing alphas for a given net `net_name`" is ``set_routing_alpha``'s
    sentence: its synopsis shows `net_name` (which reads like a command) as ``-net``'s value. A
    sentence naming another command is not the section's, whatever else the claim names."""
    text = ("This command sets routing alphas for a given net `net_name`.\n"
            "\n"
            "Then run `global_route -allow_congestion` to finish.\n"
            "\n"
            "```tcl\nset_routing_alpha\n    [-net net_name]\n```")
    kinds = markdown_line_kinds(text)
    units = text_units(text, kinds, ["set_routing_alpha"] * len(kinds))
    for claim, verified in (
            ("The `set_routing_alpha` command sets routing alphas for a given net `net_name`.", True),
            ("The `set_routing_alpha` command sets routing alphas for a given net.", True),
            ("The `global_route` command sets routing alphas for a given net `net_name`.", False),
            ("Both `set_routing_alpha` and `global_route` accept `-allow_congestion`.", False),
            ("`global_route` finishes the run while `set_routing_alpha` takes `-allow_congestion`.", False)):
        assert verify_claim(claim, [("E1", units)]).verified is verified, claim


ROWS = """| Switch Name | Description |
| --- | --- |
| `-a` | Sets a. The default value is `10`. |
| `-b` | Sets b. The default value is `20`. |
"""


@pytest.mark.parametrize(("claim", "verified"), [
    ("The default of `-a` is 10 while the default of `-b` is 20.", True),
    ("The default of `-a` is 20 while the default of `-b` is 10.", False),  # each side's value swapped
])
def test_each_side_of_a_comparison_is_bound_to_its_own_row(claim: str, verified: bool) -> None:
    units = text_units(ROWS, markdown_line_kinds(ROWS))
    assert verify_claim(claim, [("E1", units)]).verified is verified


def test_a_comparison_side_on_a_code_line_states_no_more_than_the_line() -> None:
    claim = "`-verbose` checks antennas on the specified net while `-net` repairs every violation."
    assert not verify_claim(claim, [("E1", text_units(ANTENNAS, markdown_line_kinds(ANTENNAS)))]).verified
