"""What a table row states, for claims that rest on one.

A row is about its first cell (an option, a variable, a parameter named in words); a column
named in the header holds one kind of value of it (``Min``, ``Typ``, ``Default``); a default
is the value the row gives as one. A claim that joins a row's value to another row's
subject, reads a number from the wrong column or gives a default the row does not give, is
not what the row states (``verify.py`` applies these rules to the unit a claim binds to).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from edaqa_pipeline.generation.claim_terms import (
    ClaimTerms,
    claim_terms,
    phrase_support,
    unit_support,
    whole,
)
from edaqa_pipeline.generation.units import TextUnit
from edaqa_pipeline.text.identifiers import extract_identifiers
from edaqa_pipeline.text.markup import table_cells
from edaqa_pipeline.text.quantities import NUMBER, number_matches
from edaqa_pipeline.text.tokens import content_terms

RIVAL_MARGIN = 0.15  # another row whose words fit the claim this much better describes another option
RIVAL_PHRASE_MARGIN = 0.3  # ... or whose word pairs (the phrasing) fit this much better
# a table column that holds one kind of value of a row ("Min", "Typ", "Default", ...)
VALUE_COLUMNS = {"min": "min", "minimum": "min", "typ": "typ", "typical": "typ", "nom": "nom",
            "nominal": "nom", "target": "typ", "max": "max", "maximum": "max",
            "default": "default", "value": "value"}
UNIT_COLUMNS = frozenset({"unit", "units"})  # the column a row's bare numbers take their unit from
# "The default value is `20`", "Default: `GROUND`", "defaults to 4": the value a unit gives as
# the default (a number, a quoted literal, an upper-case value or a boolean)
_DEFAULT_IN_TEXT = re.compile(
    r"\b(?i:default)(?:s| value)?(?:\s+(?:is|of|to|=))?\s*[:=]?\s*(?:`(?P<q>[^`\n]+)`|(?P<v>[-+]?\d+(?:\.\d+)?"
    r"|[A-Z][A-Z0-9_]+|[Tt]rue|[Ff]alse)(?![\w.-]*\w))")
DEFAULT_ASKED = re.compile(r"(?<![\w-])defaults?(?![\w-])", re.IGNORECASE)


def stated_default(unit: TextUnit) -> str:
    """The value ``unit`` gives as a default: the cell of its table's ``Default`` column, or the
    value after "default" in its text ("" when it states none)."""
    if unit.kind == "row" and unit.header:
        header = [c.strip("`* ").lower() for c in table_cells(unit.header)]
        for i, name in enumerate(header):
            if name.startswith("default") and i < len(unit.cells):
                return unit.cells[i].strip("`* ")
    match = _DEFAULT_IN_TEXT.search(unit.text)
    return (match.group("q") or match.group("v") or "").strip() if match else ""


def row_key(unit: TextUnit) -> str:
    """The identifier a table row is about: the one its first cell names ("" when none)."""
    if unit.kind != "row" or not unit.cells:
        return ""
    key = extract_identifiers(unit.cells[0]) or extract_identifiers(unit.cells[0], code=True)
    return key[0] if key else ""


def in_named_column(claim: str, terms: ClaimTerms, unit: TextUnit) -> bool:
    """A claim that names one value column of a row's table ("the min ... is 0.43") states
    numbers of that column's cell, not of the row's other columns."""
    if unit.kind != "row" or not unit.header or not terms.numbers:
        return True
    header = [c.strip("`*. ").lower() for c in table_cells(unit.header)]
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", claim)}
    named = {i for i, h in enumerate(header) if VALUE_COLUMNS.get(h) and any(VALUE_COLUMNS.get(w) == VALUE_COLUMNS[h] for w in words)}
    if len(named) != 1 or next(iter(named)) >= len(unit.cells):
        return True
    cell, key = unit.cells[next(iter(named))], unit.cells[0]
    return all(any(True for _ in number_matches(n, cell)) for n, _ in terms.numbers
               if not any(True for _ in number_matches(n, key)))  # a number of the row's name


def about_row(claim: str, terms: ClaimTerms, unit: TextUnit) -> bool:
    """A claim resting on a table row is about the row's subject, its first cell: a claim
    naming an option or variable names the row's own (another option its description mentions
    is not what the row states facts about); a claim stating a number of a row named in words
    ("Threshold Voltage Short Channel Device") uses the row's name, not a neighbour's."""
    key = row_key(unit)
    if key:
        if not any(i.startswith("-") or i.isupper() for i in terms.identifiers):
            return True
        return any(key.lower() == i.lower() for i in terms.identifiers)
    if unit.kind != "row" or not unit.cells or not terms.numbers:
        return True
    name = set(content_terms(unit.cells[0]))
    return len(name) > 8 or name <= set(content_terms(claim))


_DEFAULT_CLAUSE = re.compile(r"[;.](?:\s+|$)")


def default_of_row(claim: str, unit: TextUnit) -> bool:
    """A default a claim gives belongs to the option nearest to its word "default" (in the
    clause that says it, at most ``DEFAULT_WINDOW_WORDS`` words away): on a table row that
    option must be the row's own. "The default of ``-clock_buffer_footprint`` is CLKBUF; it
    excludes ``-clock_buffer_string``" is not what the ``-clock_buffer_string`` row states,
    though the row names both and gives CLKBUF. An option named as a condition ("`5` when
    ``-use_cugr`` is set") owns no default here."""
    key = row_key(unit)
    if not _OPTION_WORD.fullmatch(key):  # a row about a command or a message: no option to own it
        return True
    for clause in _DEFAULT_CLAUSE.split(claim):
        said = DEFAULT_ASKED.search(clause)
        if said is None:
            continue
        named = [(len(_between(clause, m, said)), m.group(0).strip("`")) for m in _OPTION_WORD.finditer(clause)
                 if not _CONDITION_BEFORE.search(clause[:m.start()])]
        named = [n for n in named if n[0] <= DEFAULT_WINDOW_WORDS]
        if named:
            return min(named)[1].lower() == key.lower()
    return True


DEFAULT_WINDOW_WORDS = 4  # "the default value of `-a`", "`-a` is 5 by default": the option is this close


def _between(clause: str, option: re.Match[str], said: re.Match[str]) -> list[str]:
    """The words between an option and the word "default" of a clause."""
    if option.start() < said.start():
        return clause[option.end():said.start()].split()
    return clause[said.end():option.start()].split()


# an option named as a condition ("5 when `-use_cugr` is set") is not what the default is of
_CONDITION_BEFORE = re.compile(r"\b(?:when|if|unless|with|without|while|where|once|after|before)\s+(?:\S+\s+){0,2}`?$",
                               re.IGNORECASE)
_OPTION_WORD = re.compile(r"(?<![\w-])-[A-Za-z][\w]*|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")
_ON = re.compile(r"\b(?:enabled?|on|true|turned on|active)\b", re.IGNORECASE)
_OFF = re.compile(r"\b(?:disabled?|off|false|turned off|inactive)\b", re.IGNORECASE)
_FALSE_VALUES = frozenset({"false", "off", "0", "disabled", "no"})
_TRUE_VALUES = frozenset({"true", "on", "1", "enabled", "yes"})


def _says_default(default: str, claim: str) -> bool:
    """The claim writes ``default`` as the value (a number as a number: ``5`` not in ``0.5``)."""
    if NUMBER.fullmatch(default):
        return any(True for _ in number_matches(default, claim))
    return bool(whole(default).search(claim))


def same_default(claim: str, terms: ClaimTerms, unit: TextUnit) -> bool:
    """A claim about a default states the default its unit gives (not another value of it);
    one that names no value ("enabled by default") does not contradict a boolean default; a
    unit that never speaks of a default states none, whatever numbers it holds."""
    if not DEFAULT_ASKED.search(claim):
        return True
    default = stated_default(unit)
    if not (terms.numbers or terms.literals):
        value = default.lower()
        return not ((value in _FALSE_VALUES and _ON.search(claim) and not _OFF.search(claim))
                    or (value in _TRUE_VALUES and _OFF.search(claim) and not _ON.search(claim)))
    if unit.kind == "code":  # a synopsis lists the allowed values, not which one is the default
        return bool(default) and _says_default(default, claim)
    if not default:
        return DEFAULT_ASKED.search(" ".join((unit.text, unit.header))) is not None
    return _says_default(default, claim)


def describes_another_row(claim: str, unit: TextUnit, others: Sequence[TextUnit]) -> bool:
    """A claim bound to row ``unit`` whose words are another row's (of ``others``): the option
    of one row joined to the description of its neighbour ("`-max_cap`: Max slew value ..."
    where ``-max_slew``'s row says that)."""
    key = row_key(unit)
    terms = claim_terms(claim)
    if not key or terms.numbers or terms.literals:  # a value the row states decides those
        return False
    own = unit_support(claim, unit), phrase_support(claim, unit)
    for other in others:
        if other.kind == "row" and row_key(other) not in ("", key):
            words, phrase = unit_support(claim, other), phrase_support(claim, other)
            if words > own[0] + RIVAL_MARGIN or (words >= own[0] and phrase > own[1] + RIVAL_PHRASE_MARGIN):
                return True
    return False


def row_subject_named(claim: str, terms: ClaimTerms, unit: TextUnit) -> bool:
    """Whether the claim names row ``unit``'s subject: its option or variable, or every word
    of a name of a few words ("Output voltage")."""
    key = row_key(unit)
    if key:
        return any(key.lower() == i.lower() for i in terms.identifiers)
    name = set(content_terms(unit.cells[0])) if unit.kind == "row" and unit.cells else set()
    return 2 <= len(name) <= 8 and name <= set(content_terms(claim))


def value_column(claim: str, unit: TextUnit) -> str:
    """The cell of the value column the claim names (Min, Typ, Default, ...) in row ``unit``,
    or the whole row when it names none."""
    if unit.header:
        header = [c.strip("`*. ").lower() for c in table_cells(unit.header)]
        words = {w.lower() for w in re.findall(r"[A-Za-z]+", claim)}
        named = [i for i, h in enumerate(header) if VALUE_COLUMNS.get(h) and any(VALUE_COLUMNS.get(w) == VALUE_COLUMNS[h] for w in words)]
        if len(named) == 1 and named[0] < len(unit.cells):
            return unit.cells[named[0]]
    return unit.text


def contradicting_row(claim: str, terms: ClaimTerms, binding: TextUnit, units: Sequence[TextUnit]) -> TextUnit | None:
    """A row of the cited items about the claim's subject that gives the asked value otherwise:
    "the min output voltage is 3.6 V" bound to a sentence about the input voltage, while the
    Output voltage row's Min is 3.234. Only value claims (a number with a column word or
    "default") are judged this way."""
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", claim)}
    if not terms.numbers or not any(w in VALUE_COLUMNS for w in words):
        return None
    subjects = [u for u in units if u.kind == "row" and row_subject_named(claim, terms, u)]
    if not subjects or binding in subjects:
        return None
    for unit in subjects:  # any row about the subject that gives the value settles it
        if any(any(True for _ in number_matches(n, value_column(claim, unit))) for n, _ in terms.numbers):
            return None
    return subjects[0]


def row_unit_cell(unit: TextUnit) -> str:
    """The cell of row ``unit``'s ``Unit`` column ("" when its table has none): a bare number
    of the row takes its unit from there, not from a condition elsewhere in the row."""
    if unit.kind != "row" or not unit.header:
        return ""
    header = [c.strip("`*. ").lower() for c in table_cells(unit.header)]
    for i, name in enumerate(header):
        if name in UNIT_COLUMNS and i < len(unit.cells):
            return unit.cells[i]
    return ""
