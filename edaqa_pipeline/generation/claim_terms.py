"""A claim's key terms and how they are found in a unit of evidence (``verify.py``).

Key terms are what a reader acts on: the identifiers a claim names (``text.identifiers``),
its numbers with their units (``text.quantities``), the literals it quotes in backticks and
its upper-case or boolean values. ``names`` finds an identifier only as a whole identifier;
``unit_support`` and ``phrase_support`` measure how much of the claim's other wording a unit
shares, word by word and pair by pair.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from edaqa_pipeline.generation.claims import clean_claim
from edaqa_pipeline.generation.units import TextUnit
from edaqa_pipeline.text.identifiers import extract_identifiers
from edaqa_pipeline.text.markup import UNDERSCORE_STRONG
from edaqa_pipeline.text.quantities import NUMBER, number_text, unit_at
from edaqa_pipeline.text.tokens import content_terms

_BACKTICKED = re.compile(r"`([^`\n]+)`")
# upper-case values, booleans and device or cell names that mix letters and digits
# ("VTP10x013": it is not its neighbour "VTN10x013", though neither is an identifier)
_UPPER = re.compile(r"(?<![\w-])([A-Z][A-Z0-9]{2,}|[A-Z]{2,}\d+[A-Za-z0-9]*|[Tt]rue|[Ff]alse)(?![\w-])")


@dataclass(frozen=True)
class ClaimTerms:
    """What a claim states that a unit must hold (module docstring)."""

    identifiers: tuple[str, ...]
    numbers: tuple[tuple[str, str], ...]  # (number, normalised unit or "")
    literals: tuple[str, ...]  # backticked literals and upper-case values, not identifiers

    @property
    def empty(self) -> bool:
        return not (self.identifiers or self.numbers or self.literals)


@lru_cache(maxsize=4096)
def claim_terms(text: str) -> ClaimTerms:
    text = clean_claim(text)
    identifiers = tuple(dict.fromkeys(extract_identifiers(text)))
    numbers = tuple(dict.fromkeys((number_text(m.group(1)), unit_at(text, m.end()))
                                    for m in NUMBER.finditer(text)))
    named = {i.lower() for i in identifiers} | {n for n, _ in numbers}
    literals = [m.group(1).strip() for m in _BACKTICKED.finditer(text)]
    literals += [m.group(1) for m in _UPPER.finditer(text)]
    kept = tuple(dict.fromkeys(x for x in literals if x and x.lower() not in named
                               and not any(x.lower() in i.lower() for i in identifiers)
                               and not NUMBER.fullmatch(x)))
    return ClaimTerms(identifiers, numbers, kept)


def whole(term: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(term)}(?![\w-])", re.IGNORECASE)


@lru_cache(maxsize=16384)
def identifiers_of(text: str) -> frozenset[str]:
    return frozenset(extract_identifiers(text)) | frozenset(extract_identifiers(text, code=True))


def names(ident: str, text: str) -> bool:
    """Whether ``text`` names identifier ``ident`` as a whole identifier (Markdown's
    ``__verbose_level__`` names ``verbose_level``)."""
    if ident in identifiers_of(text) or whole(ident).search(text):
        return True
    if "__" in text and (plain := UNDERSCORE_STRONG.sub(r"\1", text)) != text and names(ident, plain):
        return True  # each substitution shortens the text, so this ends
    if " -" in ident:  # "cmd -option": both, each whole
        command, _, option = ident.partition(" -")
        return bool(whole(command).search(text) and whole("-" + option).search(text))
    return False


# What a code line states besides its names and numbers: that a command is run with these
# options. A claim resting on a code line may use these words and the line's own, not its
# headings' (a heading names a topic, the line states no more of it); what an option does
# ("checks antennas on the specified net") is stated by prose or a table row.
SYNTAX_WORDS = frozenset(content_terms(
    "command commands option options flag flags argument arguments parameter parameters "
    "take takes accept accepts support supports run runs use uses call calls invoke invokes "
    "syntax usage example script tcl optional required"))


def unit_support(claim: str, unit: TextUnit) -> float:
    """Share of the claim's content words, the words of the identifiers it names left out,
    that the unit (with its table header and headings) contains; a code line holds its own
    words and those of a command's syntax (``SYNTAX_WORDS``): code states its facts in names
    and numbers, not in words."""
    if unit.kind == "code":
        return word_share(claim, _values_of(unit), SYNTAX_WORDS)
    return word_share(claim, unit)


def _values_of(unit: TextUnit) -> TextUnit:
    """A code line without its names: the values and paths it passes. The words of its
    commands and options (``make_fake_io_site -name IO_HSITE -width 1``: "site", "width")
    say nothing about what an option does, so a claim may not borrow them."""
    text = unit.text
    for ident in sorted(identifiers_of(text), key=len, reverse=True):
        text = whole(ident).sub(" ", text)
    return TextUnit(unit.kind, text, unit.first, unit.last)


def text_share(claim: str, unit: TextUnit) -> float:
    """Share of the claim's content words that the unit's own text holds (a row with its
    table header and headings; a code line alone): what a claim with no key term must match."""
    return word_share(claim, _line_alone(unit) if unit.kind == "code" else unit)


def _line_alone(unit: TextUnit) -> TextUnit:
    """The unit without its headings and table header: its own text only."""
    return TextUnit(unit.kind, unit.text, unit.first, unit.last)


def word_share(claim: str, unit: TextUnit, also: frozenset[str] = frozenset()) -> float:
    """Share of the claim's content words (its identifiers' words left out) in the unit, with
    its table header and headings (and ``also``), whatever the unit's kind: what picks, among
    the units that state a claim, the one it was written from (a table row over the synopsis
    line naming the same option and values)."""
    named = set(content_terms(" ".join(claim_terms(claim).identifiers)))
    words = [w for w in content_terms(claim) if w not in named]
    if not words:
        return 1.0
    present = set(content_terms(" ".join((unit.text, unit.header, *unit.headings)))) | also
    return sum(w in present for w in words) / len(words)


def phrase_support(claim: str, unit: TextUnit) -> float:
    """Share of the word pairs of the claim (its identifiers' words left out) that follow one
    another in the unit too: two rows may share a claim's words, only one its phrasing."""
    named = set(content_terms(" ".join(claim_terms(claim).identifiers)))
    words = [w for w in _ordered_terms(claim) if w not in named]
    pairs = set(pairwise(words))
    if not pairs:
        return 0.0
    theirs = _ordered_terms(unit.text)
    return len(pairs & set(pairwise(theirs))) / len(pairs)


def _ordered_terms(text: str) -> list[str]:
    """The content words of ``text`` in order (repeats kept)."""
    return [t for word in re.findall(r"[\w.-]+", text) for t in content_terms(word)]


# A clause that says the opposite: "clock buffers are not placed on top of blockages" is not
# stated by a claim that they are placed there, though every word of the claim is in it.
NEGATION = re.compile(r"\b(?:not|no|never|cannot|without|neither|nor)\b|n't\b", re.IGNORECASE)
# clauses end at punctuation before a space, at any bracket ("500 (-1 for no decomposition)":
# the negation is the aside's) and at a contrasting conjunction
_CLAUSE = re.compile(r"[.;,:|]+(?:\s+|$)|\s*[()\[\]]+\s*|\s+(?:but|however|whereas|while)\s+", re.IGNORECASE)
MIN_CLAUSE_WORDS = 2  # a claim clause of fewer content words is not judged by its polarity


def _clauses(text: str) -> list[tuple[set[str], bool, frozenset[str]]]:
    """(content words, negated, numbers) of each clause of ``text``."""
    out = []
    for clause in _CLAUSE.split(text):
        words = set(content_terms(clause)) - {"never", "cannot", "without"}
        if words:
            numbers = frozenset(number_text(m.group(1)) for m in NUMBER.finditer(clause))
            out.append((words, NEGATION.search(clause) is not None, numbers))
    return out


def polarity_differs(claim: str, unit: TextUnit) -> bool:
    """Whether a clause of the claim says the opposite of the unit's clause it is closest to:
    every clause of the unit that shares the most of its words (at least ``MIN_CLAUSE_WORDS``)
    is negated where the claim's clause is not, or the other way round. A claim clause that
    states a number is compared with the unit's clauses that state it ("a value of 0.0 means
    all buffers are inserted" against "A value of 0.0 means no insertion", not against the
    default's "meaning all needed delay buffers are inserted")."""
    clauses = _clauses(unit.text)
    for words, negated, numbers in _clauses(clean_claim(claim)):
        theirs = [c for c in clauses if c[2] & numbers] or clauses
        if len(words) < MIN_CLAUSE_WORDS or not theirs:
            continue
        shared = [len(words & other) for other, _, _ in theirs]
        best = max(shared)
        if best >= MIN_CLAUSE_WORDS and all(neg != negated for (_, neg, _), n in zip(theirs, shared, strict=True)
                                             if n == best):
            return True
    return False
