"""What a question asks for and which evidence units give it: a datasheet row read with its
column names ("Min 1.35 fF/µm²") states a range; an option named max_* does not."""

from __future__ import annotations

from edaqa_pipeline.generation.asks import question_ask, unit_answers
from edaqa_pipeline.generation.units import TextUnit


def _row(text: str) -> TextUnit:
    return TextUnit("row", text, 0, 0)


def test_a_limit_question_asks_for_a_range() -> None:
    assert question_ask("How much capacitance per unit area does the MIM capacitor provide?") == "range"
    assert question_ask("What is the maximum load capacitance on the pad?") == "range"
    assert question_ask("What is the default of -starts_with?") == "default"


def test_min_and_max_columns_state_a_range() -> None:
    assert unit_answers("range", _row("Specific Area Capacitance: Name CMIMA; Min 1.35 fF/µm²; Max 1.65 fF/µm²"))
    assert unit_answers("range", _row("Line Width Delta: Name DWRSIL; Min -20 nm; Target 10 nm"))
    assert unit_answers("range", _row("Via1: Name JMAXVIA1; Max 0.4 mA/Via"))


def test_names_and_words_that_hold_max_state_no_range() -> None:
    assert not unit_answers("range", _row("-max_fanout: Set the fanout limit."))
    assert not unit_answers("range", _row("The max value is printed in the report."))
    assert not unit_answers("range", _row("Capacitance Measurements MIM, Area Capacitances"))


def test_a_min_or_max_before_an_option_states_no_range() -> None:
    assert not unit_answers("range", _row("report_checks -path_delay max -format end"))
    assert not unit_answers("range", _row("set_load -min -pin_load 0.1"))
    assert not unit_answers("range", _row("max-fanout and min-area"))
    assert unit_answers("range", _row("Line Width Delta: Min −20 nm; Max ±5 nm"))
