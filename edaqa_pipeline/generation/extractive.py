"""The offline answerer: a short answer made of the evidence sentences that answer the question.

No model: every word of the answer is quoted from an evidence item, and each quoted sentence
is a claim citing the item it comes from (``answer.py`` narrows the citation to its lines).
What it does, in order:

1. **Units.** Each item's text is cut into answerable units by the parser's kind of each line
   (``parsing.lines``; the item carries them, ``retrieval.line_structure``): prose sentences
   (``text.sentences.split_sentences`` over paragraphs; a short list item is one unit),
   table rows rendered as ``cell: cell`` (the header row is not a unit; a row too long for one
   claim gives one unit per sentence of its description, each led by the option), and single
   code lines. Markdown markers are removed (``__name__`` reads ``name``). Headings, fences and
   blank lines are not units.
2. **Relevance.** A unit scores the question terms it contains: stemmed content words
   (``text.tokens.content_terms`` of the question without its identifiers) weigh 1,
   identifiers the question names (``text.identifiers.query_identifiers``: commands, options,
   variables, files) weigh ``IDENTIFIER_WEIGHT``, and so does an identifier of the unit that
   the question names in words (``-column_mux_ratio`` for "column mux ratios":
   ``DESCRIBED_FACTOR``); each term counts times its weight among the units read
   (``TERM_IDF``: ``log(1 + n / df) / log(1 + n)``, so the command every unit names counts
   little next to the option only the answering row names). An identifier the unit does not
   name but a heading above it in its item does (a table row under ``### define_power_grid /
   #### Options``) counts ``HEADING_FACTOR`` of its weight; an identifier's pieces ("define",
   "power", "grid") are not question words too. The sum is damped by the unit's length
   (``/ (words / LONG_WORDS) ** 0.5`` beyond ``LONG_WORDS``, ``* (words / SHORT_WORDS) ** 0.5``
   below ``SHORT_WORDS``: a four-word lead-in line says little), code lines count
   ``CODE_FACTOR`` of a sentence, a unit of the kind the question asks for (a default when a
   default is asked, a range, a code line for syntax: ``asks.py``) counts ``1 + ASK_BOOST``
   times, and a prior favours higher-ranked items (``RANK_PRIOR / (1 + rank)``). The best
   ``MAX_ITEMS`` items of the packed evidence are read; the question words' weights are
   learnt from the best ``LEAD_ITEMS`` of them, so a later item does not change how the
   best ones score.
3. **The direct answer first.** The lead is the best unit of the best ``LEAD_ITEMS`` items of
   the kind the question asks for (``Default: GROUND`` when a default is asked) when it
   scores at least ``ASK_LEAD`` of their best unit; otherwise their best unit.
4. **Selection.** Further units are added in score order while they bring new content (at
   most ``REDUNDANCY`` of their terms already said), until the answer holds ``TARGET_WORDS``
   words or ``MAX_UNITS`` units; a unit below ``MIN_RELATIVE`` of the best score is not
   added. A unit of an item past the best ``LEAD_ITEMS`` is added only when it states at
   least ``NEW_PART_WORDS`` question words no chosen unit states, an identifier counting
   ``IDENTIFIER_WEIGHT`` (``NEW_PART_BEYOND_LEAD``; a list a chosen line introduces is
   exempt): a later
   item is read for a part of the question the best items leave unanswered (the second of
   two asked options, the next step), not to say the first part again. A chosen line that
   ends in a colon ("... resolved by this priority:") brings the ``FOLLOW_UNITS`` units after
   it, the list it introduces.
5. **Order.** The lead stays first; the others follow in evidence order (item rank, then
   position), which keeps a procedure's steps in sequence.
6. **Frame.** ``question_frame`` turns a short "how do I ..." question (its last sentence,
   at most ``MAX_FRAME_CHARS``) into the answer's opening words, ``To enable sink clustering
   in CTS:``, so the quoted lines read as an answer to that task. The frame is the question's
   own words (lower-case pronouns turned to the reader's, brackets dropped); it is not a claim
   and cites nothing, and ``answer.py`` drops it when it restates a number or identifier that
   the cited items do not contain. Other question forms get no frame: "What is X?" framed as
   "X:" lowered the score on EDA-Corpus QA (0.476 -> 0.452); the "how" frame raised
   ORD-MMBench's text questions (0.254 -> 0.282). A long frame (a multi-part question restated
   whole) costs the reader words and says nothing.

No phrasing is made up and none depends on the question: the same rules run for every
question, and every word of a claim can be found in the line it cites. The constants were
chosen on dev data only (never ORD-QA): the OpenROAD dev sets' line-level gold (how often the
first claim cites a gold line) and atomic facts (the share of the facts the packed evidence
holds that the answer states, ``atomic_r_of_evidence``, with a median answer under 70 words
and at most five claims), EDA-Corpus QA and ORD-MMBench's text questions (ROUGE-L).
Five claims and 65 words raised the fact share on dev26 from 0.48 to 0.66 (check split 0.40
-> 0.51, constraint set 0.41 -> 0.65) at a cost in ROUGE-L on EDA-Corpus QA (0.47 -> 0.37),
whose reference answers are one or two sentences; an identifier weight of 2 (was 4) then
raised the first claim's gold hit on dev26 from 0.79 to 0.81 (constraint set 0.67 -> 0.70,
check split held at 0.57). Reading five items, a later one only for a new part of the
question, raised the asked set's fact share from 0.568 to 0.601 (dev26 0.647 -> 0.638) at a
cost of 0.026 ROUGE-L on EDA-Corpus QA; docs/answers.md has the sweeps and their commands.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from math import fsum
from typing import Any

from edaqa_pipeline.generation.asks import question_ask, unit_answers
from edaqa_pipeline.generation.grounded import MAX_CLAIM_CHARS, MAX_CLAIMS
from edaqa_pipeline.generation.row_rules import UNIT_COLUMNS, VALUE_COLUMNS
from edaqa_pipeline.generation.units import TextUnit, text_units
from edaqa_pipeline.parsing.lines import markdown_line_kinds
from edaqa_pipeline.text.identifiers import query_identifiers
from edaqa_pipeline.text.markup import LIST_MARKER, UNDERSCORE_STRONG, table_cells
from edaqa_pipeline.text.quantities import NUMBER
from edaqa_pipeline.text.sentences import split_sentences
from edaqa_pipeline.text.tokens import content_terms

IDENTIFIER_WEIGHT = 2.0
HEADING_FACTOR = 0.5
CODE_FACTOR = 0.6
LONG_WORDS = 25
SHORT_WORDS = 6
RANK_PRIOR = 1.5
TARGET_WORDS = 65
MAX_UNITS = 5
MIN_RELATIVE = 0.2
REDUNDANCY = 0.85
MAX_UNIT_CHARS = MAX_CLAIM_CHARS  # a unit must fit in one claim
MAX_ITEMS = 5
LEAD_ITEMS = 3  # the first claim, and the question words' weights, come from the best this many items
NEW_PART_BEYOND_LEAD = True  # a unit of a later item must state a question term not yet said
NEW_PART_WORDS = 1  # ... this many (an identifier counts IDENTIFIER_WEIGHT)
ASK_BOOST = 0.5  # a unit of the kind the question asks for (asks.py) scores this much more
DESCRIBED_FACTOR = 1.0  # an identifier the question names in words counts this share of a named one
FOLLOW_UNITS = 2  # the units that follow a chosen line ending in a colon (the list it introduces)
ASK_LEAD = 0.5  # the best unit of the asked kind leads when it scores this share of the best
TERM_IDF = True  # weigh question words by how few of the units read hold them

_HTML = re.compile(r"<[^>]+>")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_LAST_SENTENCE = re.compile(r"(?<=[.?!])\s+")
_HOW = re.compile(r"^how\s+(?:(?:do|can|should|could|would|must)\s+(?:i|we|you|one|users?)\s+|to\s+)"
                  r"(?P<task>.+)$", re.IGNORECASE)
# lower-case pronouns only: "US letter" and "Type I" keep their words
_READER = {"me": "you", "my": "your", "mine": "yours", "we": "you", "our": "your", "us": "you"}
MAX_FRAME_CHARS = 80  # a longer "how" sentence is not restated


@dataclass(frozen=True)
class Unit:
    text: str
    evidence_id: str
    rank: int
    position: int
    kind: str  # "sentence" | "row" | "code"
    heading: str = ""  # the headings above the unit in its item, outermost first ("" when none)
    source: TextUnit | None = None  # the unit as the verifier reads it


def _clean(line: str) -> str:
    line = _LINK.sub(r"\1", _HTML.sub(" ", line))
    line = UNDERSCORE_STRONG.sub(r"\1", LIST_MARKER.sub("", line))
    return " ".join(line.replace("**", "").split())


def units_of(text: str, evidence_id: str, rank: int,
             line_kinds: Sequence[str] | None = None) -> list[Unit]:
    """The quotable units of one item's text (``units.text_units``, by the parser's kind of
    each line; None: the parser classifies ``text`` now), cleaned for reading: Markdown
    markers removed, a row as ``cell: cell``, no Tcl comment lines, none longer than a claim.
    A two-cell row too long for one claim (an option whose description runs to a paragraph)
    gives one unit per sentence of its description, each led by the option
    (``-sink_clustering_size: If this is not specified, ...``): every word is still the
    row's, and the verifier finds the claim in that one row."""
    if line_kinds is None:
        line_kinds = markdown_line_kinds(text)
    out: list[Unit] = []
    for source in text_units(text, line_kinds):
        if source.kind == "code":
            pieces = [("" if source.text.startswith("#") else source.text, source)]  # a comment states nothing
        elif source.kind == "row":
            pieces = _row_pieces(source)
        else:
            pieces = [(_clean(source.text), source)]
        for cleaned, piece in pieces:
            if cleaned and len(cleaned) <= MAX_UNIT_CHARS:
                heading = " / ".join(_clean(h) for h in source.headings)
                out.append(Unit(cleaned, evidence_id, rank, len(out), source.kind, heading, piece))
    return out


LABEL_CHARS = 40  # a cell this short is read with its column's name ("Min 0.43 V"); prose is not


def _labelled_row(source: TextUnit) -> str:
    """A row of three or more cells under a header that names kinds of value (``VALUE_COLUMNS``),
    each short value with its column's name
    and the row's unit: "Threshold Voltage Short Channel Device: Name VTN10x013; Min 0.43 V;
    Target 0.50 V; Max 0.55 V" where ``cell: cell`` would read "VTN10x013: V: 0.43: 0.50:
    0.55" ("" for any other row). Every word is the row's or its header's."""
    header = [_clean(h).strip("`* ") for h in table_cells(source.header)] if source.header else []
    cells = [_clean(c) for c in source.cells]
    if (len(header) != len(cells) or sum(bool(c) for c in cells) < 3 or not cells[0]
            or not any(h.lower() in VALUE_COLUMNS or h.lower() in UNIT_COLUMNS for h in header)):
        return ""  # columns that do not name kinds of value (Linear, Wrap-4) read as before
    unit_column = next((i for i, h in enumerate(header) if h.lower() in UNIT_COLUMNS), None)
    unit = cells[unit_column] if unit_column is not None else ""
    parts = []
    for i, (name, cell) in enumerate(zip(header, cells, strict=True)):
        if i == 0 or i == unit_column or not cell:
            continue
        value = f"{cell} {unit}" if unit and NUMBER.fullmatch(cell) else cell
        parts.append(f"{name} {value}" if name and len(cell) <= LABEL_CHARS else value)
    return f"{cells[0]}: {'; '.join(parts)}"


def _row_pieces(source: TextUnit) -> list[tuple[str, TextUnit]]:
    """A row as ``cell: cell``; a two-cell row (``option | description``) longer than a claim,
    one piece per sentence of its description (each piece's ``source`` text is its own words,
    so the ask it answers is its own). A row of more cells is not split: a piece naming one of
    its value columns would not be verified against the header."""
    cells = [c for c in (_clean(c) for c in source.cells) if c]
    labelled = _labelled_row(source)
    if labelled and len(labelled) <= MAX_UNIT_CHARS:
        return [(labelled, source)]
    whole = ": ".join(cells)
    if len(whole) <= MAX_UNIT_CHARS or len(cells) != 2:  # only an ``option | description`` row
        return [(whole, source)]
    lead = ": ".join(cells[:-1])
    return [(f"{lead}: {sentence}", replace(source, text=f"{lead}: {sentence}"))
            for sentence in split_sentences(cells[-1])]


def question_frame(question: str) -> str:
    """The answer's opening words for a "how do I <task>?" question ("To <task>:"), else "".
    Brackets are dropped (a question's ``[E1]`` must not read as a citation)."""
    last = _LAST_SENTENCE.split(" ".join(question.split()))[-1] if question.strip() else ""
    last = last.replace("[", "").replace("]", "").rstrip("?.! ")
    match = _HOW.match(last) if len(last) <= MAX_FRAME_CHARS else None
    if not match or not re.search(r"[A-Za-z]", match.group("task")):
        return ""
    task = " ".join(_READER.get(w, w) for w in match.group("task").split())
    return f"To {task}:"


_NAMED = re.compile(r"(?<![\w-])-?[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")  # options, commands, variables


def _occurs(ident: str) -> re.Pattern[str]:
    """``ident`` as a whole token: ``-r`` is not inside "non-routable"."""
    return re.compile(rf"(?<![\w-]){re.escape(ident)}(?![\w-])", re.IGNORECASE)


def _without(text: str, identifiers: list[str]) -> str:
    for ident in sorted(identifiers, key=len, reverse=True):
        text = _occurs(ident).sub(" ", text)
    return text


class _Scorer:
    def __init__(self, question: str) -> None:
        found = query_identifiers(question)
        self.ask = question_ask(question)
        # an identifier counts once, with its weight: its pieces ("define", "power", "grid" of
        # define_power_grid) are not question words too, which had made a synopsis line that
        # repeats the names outrank the table row holding the asked default
        self.terms = set(content_terms(_without(question, found)))
        self.identifiers = {i.lower() for i in found}
        self.patterns = {i: _occurs(i) for i in self.identifiers}
        self.weight: dict[str, float] = {}  # a question word's weight among the units read
        self._matched: dict[Unit, tuple[set[str], set[str]]] = {}

    def learn(self, units: Sequence[Unit]) -> None:
        """Weigh each question word by how few of ``units`` hold it (``log(1 + n / df)`` when
        ``TERM_IDF``): the command every unit names says less about which unit answers than
        the option only the answering row names."""
        if not TERM_IDF or not units:
            return
        n = len(units)
        for word in self.terms | self.identifiers:
            df = sum(1 for u in units if word in u.text.lower() or word in set(content_terms(u.text)))
            self.weight[word] = math.log(1 + n / max(df, 1)) / math.log(1 + n)

    def matched(self, unit: Unit) -> tuple[set[str], set[str]]:
        """(question words, question identifiers) that ``unit`` states."""
        if unit not in self._matched:
            low = unit.text.lower()
            self._matched[unit] = (self.terms & set(content_terms(unit.text)),
                                   {i for i in self.identifiers if i in low})
        return self._matched[unit]

    def described(self, unit: Unit) -> set[tuple[str, ...]]:
        """The unit's identifiers that the question names in words: ``-column_mux_ratio``
        for "column mux ratios" (two or more pieces, every piece a question word)."""
        out = set()
        for match in _NAMED.finditer(unit.text):
            pieces = tuple(content_terms(match.group(0)))
            if len(pieces) >= 2 and set(pieces) <= self.terms:
                out.add(pieces)
        return out

    def adds_part(self, unit: Unit, chosen: Sequence[tuple[int, Unit]]) -> bool:
        """Whether ``unit`` states at least ``NEW_PART_WORDS`` question words that no ``chosen``
        unit states (an identifier counts ``IDENTIFIER_WEIGHT`` words)."""
        terms, idents = self.matched(unit)
        for _, other in chosen:
            said_terms, said_idents = self.matched(other)
            terms, idents = terms - said_terms, idents - said_idents
        return len(terms) + IDENTIFIER_WEIGHT * len(idents) >= NEW_PART_WORDS

    def score(self, unit: Unit) -> float:
        terms, idents = self.matched(unit)
        heading = unit.heading.lower()
        context = {i for i in self.identifiers - idents if heading and self.patterns[i].search(heading)}
        w = self.weight
        described = self.described(unit)
        pieces = {piece for ident in described for piece in ident}
        # fsum: a sum over a set must not depend on the set's order (string hashes differ
        # between processes), or two units of equal score swap places from run to run
        raw = (fsum(w.get(t, 1.0) for t in terms - pieces)
               + IDENTIFIER_WEIGHT * DESCRIBED_FACTOR * fsum(
                   fsum(w.get(p, 1.0) for p in ident) / len(ident) for ident in described)
               + IDENTIFIER_WEIGHT * (fsum(w.get(i, 1.0) for i in idents)
                                      + HEADING_FACTOR * fsum(w.get(i, 1.0) for i in context)))
        if not raw:
            return 0.0
        n_words = len(unit.text.split())
        damp = (max(1.0, n_words / LONG_WORDS) / min(1.0, n_words / SHORT_WORDS)) ** 0.5
        factor = CODE_FACTOR if unit.kind == "code" else 1.0
        if unit.source is not None and unit_answers(self.ask, unit.source):
            factor *= 1.0 + ASK_BOOST
        return factor * raw / damp + RANK_PRIOR / (1 + unit.rank)


def scored_units(question: str, evidence: Sequence[Mapping[str, Any]]
                 ) -> tuple[_Scorer, list[Unit], list[tuple[float, int, Unit]]]:
    """(the scorer, every unit of the best ``MAX_ITEMS`` items, the units that state a
    question term as (score, index, unit), best first): the one ranking of the evidence's
    lines, which the extractive answer quotes from and a model reads (``model_evidence``)."""
    scorer = _Scorer(question)
    units = [u for rank, item in enumerate(evidence[:MAX_ITEMS])
             for u in units_of(str(item["text"]), str(item["id"]), rank, item["line_kinds"])]
    scorer.learn([u for u in units if u.rank < LEAD_ITEMS])  # weights of the best items' words
    scored = sorted(((scorer.score(u), i, u) for i, u in enumerate(units)),
                    key=lambda t: (-t[0], t[1]))
    return scorer, units, [s for s in scored if s[0] > 0]


def extractive_claims(question: str, evidence: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(claim text, evidence id) pairs answering ``question`` from numbered evidence inputs."""
    scorer, units, scored = scored_units(question, evidence)
    if not scored:
        return []
    # the lead comes from the best LEAD_ITEMS items; the rest of the answer from all MAX_ITEMS read
    leads = [t for t in scored if t[2].rank < LEAD_ITEMS] or scored
    best = leads[0][0]
    asked = [t for t in leads if t[0] >= ASK_LEAD * best and t[2].source is not None
             and unit_answers(scorer.ask, t[2].source)]
    lead = asked[0] if asked else leads[0]  # the direct answer first: the best unit of the asked kind
    scored.remove(lead)
    scored.insert(0, lead)
    chosen: list[tuple[int, Unit]] = []
    said: set[str] = set()
    words = 0
    queue = list(scored)
    following: set[int] = set()  # the units a chosen line ending in a colon introduces
    while queue:
        value, index, unit = queue.pop(0)
        if len(chosen) >= min(MAX_UNITS, MAX_CLAIMS) or words >= TARGET_WORDS:
            break
        if chosen and value < MIN_RELATIVE * best:
            break
        terms = set(content_terms(unit.text))
        if chosen and terms and len(terms & said) > REDUNDANCY * len(terms):
            continue
        if any(unit.text == c.text for _, c in chosen):
            continue
        if (NEW_PART_BEYOND_LEAD and chosen and unit.rank >= LEAD_ITEMS and index not in following
                and not scorer.adds_part(unit, chosen)):
            continue  # an item past the best ones is read for a part of the question not yet answered
        chosen.append((index, unit))
        said |= terms
        words += len(unit.text.split())
        if unit.text.endswith(":"):  # "... resolved by this priority:" is said with what follows
            follow = [(best, i, units[i]) for i in range(index + 1, min(index + 1 + FOLLOW_UNITS, len(units)))
                      if units[i].evidence_id == unit.evidence_id]
            following |= {i for _, i, _ in follow}
            queue = follow + [t for t in queue if t[1] not in {i for _, i, _ in follow}]
    chosen = [chosen[0], *sorted(chosen[1:], key=lambda t: (t[1].rank, t[1].position))]
    return [(u.text, u.evidence_id) for _, u in chosen]
