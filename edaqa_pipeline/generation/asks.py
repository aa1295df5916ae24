"""What a question asks for, so that the answer leads with it.

"What is the default of -starts_with?" asks for a default; the answer's first claim should be
the line that gives it (``Default: GROUND``), not the synopsis or the sentence about the
option's purpose, however many question words those share. The rules read the question's
own words; ``unit_answers`` says whether a unit of evidence is of the asked kind. The kinds
and their words were chosen on the dev sets (docs/answers.md); a question that asks for
nothing in particular gets ``other`` and no unit is preferred.
"""

from __future__ import annotations

import re

from edaqa_pipeline.generation.units import TextUnit

ASKS: tuple[str, ...] = ("default", "range", "syntax", "meaning", "other")
_ASKED = (
    ("default", re.compile(r"\bdefaults?\b|\bby default\b|\bif (?:i|you) (?:do not|don't) (?:set|give)", re.I)),
    ("range", re.compile(r"\b(?:range|allowed|valid values?|permitted|how (?:large|small|big|many|much)|"
                         r"minimum|maximum|at most|at least|upper|lower) ", re.I)),
    ("syntax", re.compile(r"\b(?:syntax|usage|signature|invoke|invocation|which (?:command|option|flag|switch)|"
                          r"what (?:command|option|flag|switch)|(?:command|option|flag|switch) (?:to|for|that))\b", re.I)),
    ("meaning", re.compile(r"\bwhat (?:does|do|is|are)\b|\bmeans?\b|\bmeaning\b|\bpurpose\b|\bwhat .* for\b", re.I)),
)
_DEFAULT = re.compile(r"\bdefaults?\b", re.I)
_RANGE = re.compile(r"\[[^\]\n]*,[^\]\n]*\]|\bbetween\b|\brange\b|\ballowed\b|\bminimum\b|\bmaximum\b|"
                    r"\bat (?:most|least)\b|[<>]=?\s*\d|\b(?:min|max)\b(?=[\s.:]*[-−–±+]?\d)", re.I)


def question_ask(question: str) -> str:
    """The first kind in ``ASKS`` whose words the question uses (``other`` when none)."""
    for ask, pattern in _ASKED:
        if pattern.search(question):
            return ask
    return "other"


def unit_answers(ask: str, unit: TextUnit) -> bool:
    """Whether ``unit`` is of the kind ``ask`` asks for: a line that gives a default, a range,
    a synopsis or call (a code line), or a table row (an option's meaning)."""
    if ask == "default":
        return bool(_DEFAULT.search(unit.text))
    if ask == "range":
        return bool(_RANGE.search(unit.text))
    if ask == "syntax":
        return unit.kind == "code"
    if ask == "meaning":
        return unit.kind in ("row", "sentence")
    return False
