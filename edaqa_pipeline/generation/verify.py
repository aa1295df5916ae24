"""Strict claim verification: a claim is shown as a fact only when one unit of a cited item
states everything it names.

A claim's **key terms** are what a reader would act on: every identifier it names (commands,
``-options``, ORFS variables, message ids, files: ``text.identifiers``), every number (with its
unit when the claim gives one), every literal it quotes in backticks and every upper-case
value (``GROUND``, ``VDD``). The claim is verified when one **unit** of one cited item
(``units.py``: a sentence, a table row, a code line) holds all of them:

* an identifier as a whole identifier (``-r`` is not found in "non-routable"); a command may
  also be named by the headings above the unit (a table of options under
  ``### clock_tree_synthesis``), by the command its section documents (``TextUnit.subject``:
  the options rows of ``### Repair Timing`` are ``repair_timing``'s, and so is "This command
  sets ... for a given net `net_name`" when the item's synopsis shows `net_name` as an
  option's value; a unit that names another command is not) or by a synopsis of the item
  that lists the unit's option, never by another unit;
* a number as a number (``5`` is not in ``0.5`` or ``15``); when the claim gives a unit
  (``50 um``), the text at that number must give the same unit (``microns`` = ``um``) or none
  while the unit is named elsewhere in the unit or its table header;
* a quoted literal or upper-case value as a whole word of the unit.

So a claim that joins an option to a value from another row, a command to another command's
option, or a number from an example elsewhere in the item fails. A claim that compares two
things (``... while ...``, ``... than ...``) may bind each side to its own unit: each unit holds
at least one of the claim's names and, when the claim states numbers, at least one of them.
A claim with no key term must share at least ``SUPPORT_THRESHOLD`` of its content words with
one unit's own text (a code line's words, not its headings'); a code line states names and
numbers, so a claim with key terms resting on one may add only the words of a command's
syntax (``claim_terms.SYNTAX_WORDS``). The citation of a verified claim narrows to the lines
of the units it binds to.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from edaqa_pipeline.generation.claim_terms import (
    ClaimTerms,
    claim_terms,
    identifiers_of,
    names,
    polarity_differs,
    text_share,
    unit_support,
    whole,
    word_share,
)
from edaqa_pipeline.generation.claims import clean_claim
from edaqa_pipeline.generation.row_rules import (
    about_row,
    contradicting_row,
    default_of_row,
    describes_another_row,
    in_named_column,
    row_key,
    row_unit_cell,
    same_default,
    stated_default,
)
from edaqa_pipeline.generation.units import TextUnit
from edaqa_pipeline.text.identifiers import identifier_kind
from edaqa_pipeline.text.quantities import number_matches, unit_at, units_named
from edaqa_pipeline.text.tokens import content_terms

SUPPORT_THRESHOLD = 0.6  # a claim with no key term: its words that one unit must hold
BINDING_SUPPORT = 0.6  # a claim with key terms: its other words that the unit holding them must hold
# a quoted lower-case name (`pdngen`): a command the identifier rules do not know
_COMMAND_WORD = re.compile(r"[a-z][a-z0-9_]*[a-z0-9]")
# an option's value in a synopsis: `net_name` of `[-net net_name]` (a name, not a command)
_OPTION_VALUE = re.compile(r"(?<![\w-])-[A-Za-z][\w-]*\s+([A-Za-z_]\w*)")
# a side that begins with a pronoun is about the other side's subject, not a second item
_REFERS_BACK = re.compile(r"(?:it|its|it's|this|that|they|their|which|the same)\b", re.IGNORECASE)
_COMPARISON = re.compile(r"\b(while|whereas|than|compared|versus|vs\.?|respectively|both|differ\w*|"
                         r"instead of|unlike|but)\b", re.IGNORECASE)


def states_number(number: str, unit: str, text: str, context: str) -> bool:
    """``number`` occurs as a number in ``text``; with ``unit``, the text's unit at it agrees
    (or it gives none and ``context`` names the unit)."""
    found = False
    for match in number_matches(number, text):
        if not unit:
            return True
        there = unit_at(text, match.end())
        if there == unit:
            return True
        found = found or not there
    # a bare number: the unit must be named nearby (its sentence, the row, the table header)
    return found and unit in units_named(context)


def _owners(item: Sequence[TextUnit], unit: TextUnit) -> str:
    """Text that ties ``unit`` to a command: its headings, the command its section documents
    (``TextUnit.subject``), and the item's other units that name one of the options ``unit``
    names (a synopsis ``cmd [-option value]``)."""
    options = [o for o in identifiers_of(unit.text) if o.startswith("-")]
    blocks = {u.block for u in item if u.kind == "code" and (u is unit or any(names(o, u.text) for o in options))}
    synopses = [u.text for u in item if u.kind == "code" and u.block in blocks]
    # the section's command owns a unit that names no other command (an options row; "This
    # command sets ... for a given net `net_name`", whose `net_name` is the value of a synopsis
    # option), not one that names another command (an example's `global_route -verbose`)
    values = {m.group(1) for u in item if u.kind == "code" for m in _OPTION_VALUE.finditer(u.text)}
    others = [i for i in identifiers_of(unit.text) if identifier_kind(i) == "command" and i not in values]
    subject = unit.subject if not others else ""
    return " ".join((*unit.headings, subject, *synopses))


def _holds(unit: TextUnit, terms: ClaimTerms, owners: str) -> tuple[set[str], set[str], set[str]]:
    """(identifiers, numbers, literals) of ``terms`` that ``unit`` holds; a command may be named
    by ``owners`` (headings above the unit, a synopsis naming the unit's option)."""
    body = unit.text
    context = row_unit_cell(unit) or " ".join((body, unit.header))
    idents = {i for i in terms.identifiers
              if names(i, body) or (" -" not in i and not i.startswith("-") and names(i, owners))
              or (" -" in i and names(i.partition(" -")[0], owners) and names("-" + i.partition(" -")[2], body))}
    numbers = {n for n, u in terms.numbers if states_number(n, u, body, context)}
    # a quoted lower-case name (`pdngen`: a command the identifier rules do not know) may be
    # named by the owners too; a value (upper-case, boolean, any other literal) only by the unit
    literals = {x for x in terms.literals
                if whole(x).search(body) or (_COMMAND_WORD.fullmatch(x) and x not in ("true", "false")
                                             and whole(x).search(owners))}
    return idents, numbers, literals


@dataclass(frozen=True)
class Binding:
    """A unit a verified claim rests on: the cited item's id and the unit."""

    evidence_id: str
    unit: TextUnit


@dataclass(frozen=True)
class Verdict:
    verified: bool
    reason: str  # why not ("" when verified)
    bindings: tuple[Binding, ...] = ()
    support: float = 0.0


def verify_claim(claim: str, cited: Sequence[tuple[str, Sequence[TextUnit]]], *, compare: bool = True) -> Verdict:
    """The verdict on ``claim`` against the units of the items it cites ((id, units) pairs);
    ``compare``: a comparison may bind each side to its own unit."""
    text = clean_claim(claim)
    if not text:
        return Verdict(False, "the claim is empty")
    terms = claim_terms(text)
    pool = [Binding(eid, u) for eid, units in cited for u in units]
    if terms.empty:  # words only: a code line holds them only in its own words
        if not content_terms(text):  # "No.", "It does not.": nothing a unit could be found to state
            return Verdict(False, "the claim states no name, number or word to check")
        best = max(pool, key=lambda b: text_share(text, b.unit), default=None)
        score = text_share(text, best.unit) if best else 0.0
        if best is not None and score >= SUPPORT_THRESHOLD and not polarity_differs(text, best.unit):
            return Verdict(True, "", (best,), score)
        return Verdict(False, f"no single sentence, row or code line of {_ids(cited)} states it")
    wanted_i, wanted_n = set(terms.identifiers), {n for n, _ in terms.numbers}
    wanted_l = set(terms.literals)
    items = dict(cited)
    owners = {id(b): _owners(items[b.evidence_id], b.unit) for b in pool}
    held = [(b, _holds(b.unit, terms, owners[id(b)])) for b in pool]
    holding = [b for b, (i, n, lit) in held if i >= wanted_i and n >= wanted_n and lit >= wanted_l]
    complete = [b for b in holding if not _rule_broken(text, terms, b, pool)]
    if complete:  # the unit the claim was written from: its words, then the names it writes itself
        best = max(complete, key=lambda b: (unit_support(text, b.unit), word_share(text, b.unit),
                                            sum(names(i, b.unit.text) for i in terms.identifiers)))
        return Verdict(True, "", (best,), unit_support(text, best.unit))
    sides = _sides(text) if compare else None
    if sides is not None:
        paired = _compared(sides, pool, owners)
        if paired is not None:
            return paired
    if holding:  # the reason of the unit the claim is closest to (the row, not the synopsis)
        closest = max(holding, key=lambda b: word_share(text, b.unit))
        return Verdict(False, _rule_broken(text, terms, closest, pool))
    return Verdict(False, _missing(terms, held, cited))


def _rule_broken(claim: str, terms: ClaimTerms, binding: Binding, pool: Sequence[Binding]) -> str:
    """Why a unit that holds every key term of the claim still does not state it ("" when it
    does): the module docstring's rules, in order."""
    unit, eid = binding.unit, binding.evidence_id
    if not about_row(claim, terms, unit):
        return f"the row of {eid} that names them is about {row_key(unit) or unit.cells[0]}, not what the claim names"
    if not default_of_row(claim, unit):
        return f"the row of {eid} gives the default of {row_key(unit)}, not of the option the claim gives it to"
    if not same_default(claim, terms, unit):
        stated = stated_default(unit)
        if not stated:
            return f"the {unit.kind} of {eid} that names them states no default"
        return f"{eid} states the default as {stated}, not the value the claim gives"
    if not in_named_column(claim, terms, unit):
        return f"the number is not in the column of {eid}'s table that the claim names"
    if unit_support(claim, unit) < BINDING_SUPPORT:
        return f"the {unit.kind} of {eid} that names them does not say what the claim says of them"
    if polarity_differs(claim, unit):
        return f"the {unit.kind} of {eid} that names them says the opposite (a negation the claim lacks or adds)"
    rival = contradicting_row(claim, terms, unit, [b.unit for b in pool])
    if rival is not None:
        return f"the row of {rival.cells[0] if rival.cells else 'the table'} gives that value otherwise"
    if describes_another_row(claim, unit, [b.unit for b in pool]):
        return f"the claim's words describe another row of {', '.join(dict.fromkeys(b.evidence_id for b in pool))}"
    return ""


def _sides(text: str) -> tuple[str, str] | None:
    """The two sides of a comparison ("``-a`` defaults to 10 while ``-b`` defaults to 20"),
    each naming something of its own; None for any other claim."""
    parts = _COMPARISON.split(text, maxsplit=1)
    if len(parts) < 3:
        return None
    left, right = parts[0].strip(), parts[-1].strip()
    if claim_terms(left).empty or claim_terms(right).empty or _REFERS_BACK.match(right):
        return None  # "..., but its default is 34" speaks of the left side's subject again
    return left, right


def _compared(sides: tuple[str, str], pool: Sequence[Binding], owners: dict[int, str]) -> Verdict | None:
    """Each side bound to its own unit, by the rules a one-unit claim meets (so a value from
    the other side's row, or words a code line does not state, fail); None when no two units do."""
    bound: list[Binding] = []
    for side in sides:
        terms = claim_terms(side)
        wanted = (set(terms.identifiers), {n for n, _ in terms.numbers}, set(terms.literals))
        found = [b for b in pool if b not in bound
                 and all(h >= w for h, w in zip(_holds(b.unit, terms, owners[id(b)]), wanted, strict=True))
                 and not _rule_broken(side, terms, b, pool)]
        if not found:
            return None
        bound.append(max(found, key=lambda b, side=side: (unit_support(side, b.unit), word_share(side, b.unit))))
    support = min(unit_support(side, b.unit) for side, b in zip(sides, bound, strict=True))
    return Verdict(True, "", tuple(bound), support)


def _ids(cited: Sequence[tuple[str, Sequence[TextUnit]]]) -> str:
    return ", ".join(eid for eid, _ in cited)


def _missing(terms: ClaimTerms, held: Sequence[tuple[Binding, tuple[set[str], set[str], set[str]]]],
             cited: Sequence[tuple[str, Sequence[TextUnit]]]) -> str:
    """Why the best unit fails: the key terms it lacks."""
    everything = [*terms.identifiers, *(n for n, _ in terms.numbers), *terms.literals]
    if not held:
        return f"{_ids(cited)} has no sentence, row or code line"
    best = max(held, key=lambda bh: len(bh[1][0]) + len(bh[1][1]) + len(bh[1][2]))
    have = best[1][0] | best[1][1] | best[1][2]
    lacking = [t for t in everything if t not in have]
    units = {n: u for n, u in terms.numbers if u}
    shown = [f"{t} {units[t]}" if t in units else t for t in lacking]
    return (f"{', '.join(shown)} not stated in the same sentence, row or code line of "
            f"{_ids(cited)} as the rest of the claim")
