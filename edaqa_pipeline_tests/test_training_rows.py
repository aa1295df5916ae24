"""Row-level training queries (parameter-table rows, variables, diagnostics, procedure steps),
identifier-carrying unit summaries and identifier-hard negatives, on hand-written units whose
expected output is worked out by hand."""

from __future__ import annotations

import numpy as np

from edaqa_pipeline.graphs.summaries import ID_CHARS, MAX_CHARS, offline_summary, unit_identifiers
from edaqa_pipeline.training.hard_negatives import IdentifierNegatives, query_names
from edaqa_pipeline.training.row_queries import row_forms, row_queries
from edaqa_pipeline.training.templates import template_queries
from edaqa_pipeline.training.unit_facts import copies_unit_text, unit_facts

OPTIONS = """| Switch | Description |
| --- | --- |
| `-max_length` | Sets the maximum wire length in microns. The default is `1000`. |
| `-slew_margin` | Margin added to the slew limit. |
| `-verbose` | Enables verbose reporting of every repaired net. |"""


def _art(i: int, a_type: str, content: str, doc: str = "rsz.md") -> dict:
    return {"node_id": f"n{i}", "artifact_type": a_type, "content": content, "document": doc,
            "section_path": ["Resizer", "repair_design"]}


def _unit(anchor: str, kind: str, arts: list[dict], unit_id: str = "u1") -> dict:
    return {"unit_id": unit_id, "anchor": anchor, "anchor_kind": kind,
            "artifact_types": sorted({a["artifact_type"] for a in arts}), "summary": ""}


def test_option_rows_give_default_purpose_task_and_meaning_queries() -> None:
    arts = [_art(1, "table", OPTIONS), _art(2, "codeblock", "repair_design -max_length 500")]
    facts = unit_facts(_unit("repair_design", "command", arts), arts)
    forms = {(form, query) for form, _, query in row_forms(facts)}
    # -max_length: description with a default, led by a third-person verb ("Sets").
    assert ("option_default", "What is the default value of `-max_length` for `repair_design`?") in forms
    assert ("option_purpose", "Which option of `repair_design` sets the maximum wire length in microns?") in forms
    assert ("option_task", "How do I set the maximum wire length in microns with `repair_design`?") in forms
    # -slew_margin: a noun phrase, no default.
    assert ("option_purpose", "Which option of `repair_design` controls margin added to the slew limit?") in forms
    assert not any(q.startswith("What is the default value of `-slew_margin`") for _, q in forms)
    # -verbose: "Enables" -> "enable".
    assert ("option_task", "How do I enable verbose reporting of every repaired net with `repair_design`?") in forms
    assert all(types == ("table",) for _, types, _ in row_forms(facts))
    queries = row_queries(facts, 4)
    assert len(queries) == 4 and len({q["query"] for q in queries}) == 4
    assert len({q["form"] for q in queries}) == 4  # one per form before a second of any
    assert not any(copies_unit_text(q["query"], facts.sentences) for q in queries)
    assert row_queries(facts, 4) == queries  # deterministic
    # template_queries = unit-level forms first, then the row-level ones.
    both = template_queries(facts, 2, rows=3)
    assert [q["query"] for q in both[2:]] == [q["query"] for q in row_queries(facts, 3)]
    assert template_queries(facts, 2, rows=0) == both[:2]


def test_variable_diagnostic_log_and_procedure_rows() -> None:
    arts = [
        _art(1, "table", "| Variable | Description |\n| --- | --- |\n"
             "| `CORE_UTILIZATION` | The core utilization percentage. |", doc="orfs_flow_variables.md"),
        _art(2, "diagnostic", "GRT-0118 Routing congestion too high. Check the global routing report."),
        _art(3, "codeblock", "global_route\n[WARNING GRT-0243] Net clk has no routing guide."),
        _art(4, "procedure", "1. Read the design and the libraries."),
        _art(5, "procedure", "2. Run global routing with the default layers."),
    ]
    unit = _unit("section:Flow > Routing", "section", arts)
    facts = unit_facts(unit, arts)
    assert facts.variables == [("CORE_UTILIZATION", "The core utilization percentage.")]
    assert facts.log_lines == ["[WARNING GRT-0243] Net clk has no routing guide."]
    forms = {(form, types, query) for form, types, query in row_forms(facts)}
    assert ("variable_meaning", ("table",), "What does the variable `CORE_UTILIZATION` control?") in forms
    assert ("variable_purpose", ("table",), "Which flow variable is the core utilization percentage?") in forms
    # message ids carry the type of the artifact they were found in
    assert ("message_meaning", ("diagnostic",), "What does the message GRT-0118 mean and how do I fix it?") in forms
    assert ("message_meaning", ("codeblock",), "What does the message GRT-0243 mean and how do I fix it?") in forms
    assert ("diagnostic_text", ("diagnostic",), 'I get "GRT-0118 Routing congestion too high". What does it mean?') in forms
    assert ("log_line", ("codeblock",), 'Why does the log say "[WARNING GRT-0243] Net clk has no routing guide"?') in forms
    # only the first step has a successor
    assert [q for f, _, q in forms if f == "procedure_next"] == [
        "After I read the design and the libraries, what is the next step for Routing?"]
    for _, types, _ in forms:
        assert set(types) <= set(unit["artifact_types"])  # T_q is a subset of T(e+)


def test_summary_lists_identifiers_the_type_lines_do_not_show() -> None:
    rows = "\n".join(f"| `-option_number_{i:02d}` | Sets parameter {i}. |" for i in range(30))
    table = "| Switch | Description |\n| --- | --- |\n" + rows
    arts = [_art(1, "table", table), _art(2, "text", "See also `report_checks` and the file `gcd_nangate45.sdc`.")]
    summary = offline_summary("repair_design", "command", "occurrence", ["Resizer"], arts)
    lines = summary.splitlines()
    assert lines[:3] == ["command: repair_design", "section: Resizer", "types: table, text"]
    assert lines[3].startswith("identifiers: ") and len(lines[3]) <= len("identifiers: ") + ID_CHARS
    listed = lines[3].removeprefix("identifiers: ").split(", ")
    # the [table] line is cut at PER_TYPE_CHARS: what it still shows is not listed again,
    # what it lost is; the text artifact's command and file are visible in the [text] line
    table_line = next(ln for ln in lines if ln.startswith("[table]"))
    assert "-option_number_00" in table_line and "-option_number_00" not in listed
    assert "-option_number_29" not in table_line
    hidden = [o for o in (f"-option_number_{i:02d}" for i in range(30)) if o not in table_line]
    assert listed == hidden[:len(listed)] and len(listed) >= 10
    assert "report_checks" not in listed and "gcd_nangate45.sdc" not in listed
    assert len(summary) <= MAX_CHARS
    assert set(unit_identifiers("repair_design", "command", arts)) >= {"report_checks", "gcd_nangate45.sdc", "-option_number_29"}


def test_identifier_negatives_same_command_other_option_then_same_option_other_command() -> None:
    summaries = [
        "command: repair_design\n[table] -max_length",  # 0: the positive
        "command: repair_design\n[table] -slew_margin",  # 1: same command, other option
        "command: repair_timing\n[table] -max_length",  # 2: same option, other command
        "section: Placement\n[text] global placement density",  # 3: unrelated
        "command: repair_design\n[table] -max_length -slew_margin",  # 4: names both: may answer
        "section: Wires\n[text] the maximum wire length of a net",  # 5: lexical only
    ]
    identifiers = [{"repair_design", "-max_length"}, {"repair_design", "-slew_margin"},
                   {"repair_timing", "-max_length"}, set(), {"repair_design", "-max_length", "-slew_margin"},
                   set()]
    anchors = ["repair_design", "", "repair_timing", "", "", ""]
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(6, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    negatives = IdentifierNegatives(summaries, identifiers, anchors, vectors)
    query = "What is the default value of `-max_length` for `repair_design`? maximum wire length"
    assert query_names(query) == ({"repair_design"}, {"-max_length"}, set())
    pool = negatives.pool(query, 0, excluded={0})
    graph = sorted([1, 2], key=lambda r: -float(vectors[r] @ vectors[0]))
    assert pool[:2] == graph  # the graph negatives first, closest to the positive first
    assert 4 not in pool and 0 not in pool  # names every identifier of the query / the positive
    assert 5 in pool[2:]  # the lexical hit follows
    assert 3 not in pool  # shares no term and no identifier
    # a query naming no command is about its positive's command anchor
    assert query_names("What does `-max_length` mean?", "repair_design") == ({"repair_design"}, {"-max_length"}, set())
