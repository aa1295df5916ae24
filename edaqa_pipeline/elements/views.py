"""The three retrieval views of an element: identifiers, summary, raw evidence.

Identifier view (``extract_identifiers``): technical anchors found in an element's text,
canonicalised so that surface variants meet (paper section 4.2):

==============  ==============================  ========================================
kind            examples in text                canonical form
==============  ==============================  ========================================
command         ``global_route``, `tapcell`     lower case (``global_route``)
option          ``-max_length``, ``--verbose``  lower case, one dash (``-max_length``)
qualified       ``place_pin -layer``            ``place_pin -layer`` (option of command)
variable        ``CORE_UTILIZATION``            upper case
message id      ``GRT-243``, ``[WARNING GRT-0243]`` ``GRT-0243`` (prefix + 4 digits)
file            ``./results/Floorplan.DEF``     lower-case basename (``floorplan.def``)
api             ``dbBlock::getName``            lower case (``dbblock::getname``)
label           "Table 3", "Figure 2", "3.2"    ``table:3``, ``figure:2``, ``section:3.2``
==============  ==============================  ========================================

Commands are snake_case words anywhere (``set_routing_alpha``), the first word of an inline
code span, or the first word of a code line; options in a code line are qualified by that
line's command, options elsewhere by the element's scope command (the command its section
documents) when there is one. Placeholders (``my_design``, ``<file>``) and language words
never become identifiers (``extraction.anchors``).

At query time the same extraction runs on the query; identifiers missing from the corpus
vocabulary are fuzzy-matched (``IdentifierVocabulary.match``: difflib ratio >= 0.8 within the
same kind and +-3 characters; rapidfuzz is not installed here and difflib is fast enough on
the few thousand identifiers of a manual set).

Summary view: ``elements/summaries.py`` (``offline_summary``: section path + first sentence
+ identifiers; an LLM summary replaces it when a provider is configured, task
``element_summary``). The OCR-like corruption of the robustness experiment is in
``elements/corruption.py``.

The BM25 tokens (``tokens``) keep compound identifiers whole and add their stemmed parts.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from functools import lru_cache

from edaqa_pipeline.extraction.anchors import is_placeholder, normalise_anchor
from edaqa_pipeline.extraction.patterns import (
    FILE_NAME,
    INLINE_CODE,
    LANGUAGE_WORDS,
    MESSAGE_ID,
    URL,
    file_names,
)

SNAKE = re.compile(r"(?<![\w$:/.\-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w/])(?!\.\w)")
OPTION = re.compile(r"(?<![\w\-/])(--?[a-zA-Z][A-Za-z0-9_]+)(?![\w\-])")
VARIABLE = re.compile(r"(?<![\w$])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w])")
API = re.compile(r"\b([A-Za-z_]\w*(?:::\w+)+)")
WORD = re.compile(r"^[a-z][a-z0-9_]{2,}$")
LABEL_REF = re.compile(
    r"\b(?P<kind>Table|Tab\.|Figure|Fig\.|Section|Sect\.|Sec\.|Clause|Chapter|§)\s*"
    r"(?P<num>[A-Z]?\d+(?:[.\-]\d+)*)",
    re.IGNORECASE,
)
_LABEL_KIND = {
    "table": "table", "tab.": "table", "figure": "figure", "fig.": "figure",
    "section": "section", "sect.": "section", "sec.": "section", "clause": "section",
    "chapter": "section", "§": "section",
}  # fmt: skip

STOPWORDS = frozenset(
    """
    a an the and or but if of to in on at by for with from as is are was were be been being it
    its this that these those there here which who whom whose what when where why how do does
    did done can could should would will shall may might must not no nor so than then too very
    i you he she we they me my your our their them us into over under about after before
    between through during above below up down out off again further once all any both each
    few more most other some such only own same just also use used using via per e g eg ie etc
    one want need like get make run """.split()
)

ID_KINDS = ("command", "option", "qualified", "variable", "message", "file", "api", "label")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Porter stem (nltk, cached); words with digits are kept as they are."""
    if any(ch.isdigit() for ch in word) or len(word) <= 3:
        return word
    from nltk.stem.porter import PorterStemmer

    return _porter(PorterStemmer).stem(word)


@lru_cache(maxsize=1)
def _porter(cls):  # type: ignore[no-untyped-def]
    return cls()


_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[_\-:][A-Za-z0-9]+)*")
_SPLIT = re.compile(r"[_\-:]+")


def tokens(text: str) -> list[str]:
    """BM25 tokens: compound identifiers whole (``max_length``) plus their stemmed parts."""
    out: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match.group(0).lower()
        parts = [p for p in _SPLIT.split(token) if p]
        if len(parts) > 1:
            out.append(token)
        for part in parts:
            if part not in STOPWORDS and len(part) > 1:
                out.append(stem(part))
    return out


# --- canonicalisation -------------------------------------------------------------------


def canonical_message(raw: str) -> str:
    prefix, _, number = raw.upper().partition("-")
    return f"{prefix}-{int(number):04d}" if number.isdigit() else raw.upper()


def canonical_label(kind: str, number: str) -> str:
    """``table:3``, ``figure:2``, ``section:3.2`` (dashes in numbers become dots)."""
    kind = _LABEL_KIND.get(kind.lower(), kind.lower())
    return f"{kind}:{number.replace('-', '.').rstrip('.').lower()}"


def canonical(raw: str) -> str:
    """The canonical form of one identifier as written (see the module table)."""
    text = raw.strip().strip("`'\"[](){}<>,;").strip()
    if not text:
        return ""
    if ":" in text and text.split(":", 1)[0] in ("table", "figure", "section"):
        return text.lower()
    if re.fullmatch(r"[A-Z]{2,5}-\d{1,5}", text):
        return canonical_message(text)
    if " -" in text:
        cmd, _, opt = text.partition(" -")
        return f"{cmd.strip().lower()} -{opt.strip().lower().lstrip('-')}"
    if text.startswith("-"):
        return "-" + text.lstrip("-").lower()
    if "::" in text:
        return text.lower()
    if VARIABLE.fullmatch(text):
        return text
    if FILE_NAME.fullmatch(text.rsplit("/", 1)[-1]):
        return normalise_anchor(text)
    return text.lower()


def identifier_kind(canon: str) -> str:
    if canon.startswith(("table:", "figure:", "section:")):
        return "label"
    if " -" in canon:
        return "qualified"
    if canon.startswith("-"):
        return "option"
    if "::" in canon:
        return "api"
    if re.fullmatch(r"[A-Z]{2,5}-\d{4,5}", canon):
        return "message"
    if VARIABLE.fullmatch(canon):
        return "variable"
    if FILE_NAME.fullmatch(canon):
        return "file"
    return "command"


def _ok_command(word: str) -> bool:
    return bool(word) and word not in LANGUAGE_WORDS and not is_placeholder(word)


def _line_command(line: str) -> str:
    """The command a code line invokes (its first word), or ''."""
    stripped = line.strip()
    if not stripped or stripped.startswith(("#", "//", "$", "-", "[", "<", "{", "}")):
        return ""
    word = stripped.split()[0].rstrip(";")
    if "=" in word or not WORD.match(word):
        return ""
    return word if _ok_command(word) else ""


def code_commands(code: str) -> list[str]:
    """Commands invoked by a code block's lines, in order (continuations skipped)."""
    out: list[str] = []
    continued = False
    for line in code.split("\n"):
        if not continued and not line.startswith((" ", "\t")):
            cmd = _line_command(line)
            if cmd:
                out.append(cmd)
        continued = line.rstrip().endswith("\\")
    return list(dict.fromkeys(out))


def extract_identifiers(
    text: str, *, code: bool = False, scope_command: str = "", query: bool = False
) -> list[str]:
    """Canonical identifiers of ``text`` in first-seen order (see the module docstring).

    ``code``: the text is a code block (first words of lines are commands, options are
    qualified by their line's command). ``scope_command``: the command the element's section
    documents, used to qualify options that no command in the same span qualifies. ``query``:
    options are qualified by every command named in the text.
    """
    found: dict[str, None] = {}

    def add(value: str) -> None:
        canon = canonical(value)
        if canon and len(canon) > 1:
            found.setdefault(canon, None)

    clean = URL.sub(" ", text)
    clean = re.sub(r"\]\([^)]*\)", "]", clean)  # Markdown link targets are not identifiers
    commands: list[str] = []
    if code:
        current = ""
        continued = False
        for line in clean.split("\n"):
            if not continued and not line.startswith((" ", "\t")):
                cmd = _line_command(line)
                current = cmd or current
                if cmd:
                    add(cmd)
                    commands.append(cmd)
            for opt in OPTION.findall(line):
                add(opt)
                if current:
                    add(f"{current} {opt}")
            continued = line.rstrip().endswith("\\")
    for span in INLINE_CODE.findall(clean):
        words = span.strip().split()
        if not words:
            continue
        first = words[0].rstrip("();,")
        # a single word in backticks is a command only in snake_case (`layer` is a value);
        # with options after it (`tapcell -distance 5`) any word is
        command_like = SNAKE.fullmatch(first) or (len(words) > 1 and OPTION.fullmatch(words[1]))
        if WORD.match(first) and command_like and _ok_command(first) and not code:
            add(first)
            commands.append(first)
            for opt in OPTION.findall(span):
                add(f"{first} {opt}")
    # snake_case words are commands in prose; in code only the first word of a line or of a
    # bracketed sub-command is (``place_pin -pin_name pin_name``: pin_name is a placeholder)
    snake = re.findall(r"\[\s*([a-z][a-z0-9]*(?:_[a-z0-9]+)+)", clean) if code else SNAKE.findall(clean)
    for word in snake:
        if _ok_command(word):
            add(word)
            commands.append(word)
    for raw in MESSAGE_ID.findall(clean):
        add(raw)
    for raw in VARIABLE.findall(clean):
        if not MESSAGE_ID.fullmatch(raw):
            add(raw)
    for raw in API.findall(clean):
        add(raw)
    for name in file_names(clean):
        canon = normalise_anchor(name)
        if canon and not is_placeholder(canon):
            found.setdefault(canon, None)
    options = [o for o in OPTION.findall(clean) if not re.fullmatch(r"-+\d.*", o)]
    for opt in options:
        add(opt)
    qualifiers = list(dict.fromkeys(commands))[:3] if query else []
    if scope_command and not code:
        qualifiers = [scope_command, *qualifiers] if not query else qualifiers
    for opt in options:
        for cmd in qualifiers:
            add(f"{cmd} {opt}")
    return list(found)


def label_refs(text: str) -> list[tuple[str, str, int, int]]:
    """References such as "Table 3", "Fig. 2", "Section 3.2", "§4": (kind, label, start, end)."""
    out = []
    for match in LABEL_REF.finditer(text):
        kind = _LABEL_KIND[match.group("kind").lower()]
        out.append((kind, canonical_label(kind, match.group("num")), match.start(), match.end()))
    return out


def query_identifiers(query: str) -> list[str]:
    """Identifiers of a query: the document rules plus label references and qualified options."""
    ids = extract_identifiers(query, query=True)
    ids += [canonical_message(m) for m in re.findall(r"\b[A-Za-z]{2,5}-\d{3,5}\b", query)]
    ids += [label for _, label, _, _ in label_refs(query)]
    return list(dict.fromkeys(ids))


# --- fuzzy matching at query time -------------------------------------------------------


class IdentifierVocabulary:
    """Canonical identifiers of the index, grouped by kind, for exact and fuzzy lookup."""

    def __init__(self, identifiers: Iterable[str], cutoff: float = 0.8) -> None:
        self.known = set(identifiers)
        self.cutoff = cutoff
        self._lower: dict[str, list[str]] = {}
        for ident in sorted(self.known):
            self._lower.setdefault(ident.lower(), []).append(ident)
        self._by_kind: dict[str, list[str]] = {}
        for ident in sorted(self.known):
            self._by_kind.setdefault(identifier_kind(ident), []).append(ident)

    def match(self, query_ids: Iterable[str], n: int = 2) -> dict[str, float]:
        """Vocabulary identifier -> match weight (1.0 exact, difflib ratio when fuzzy)."""
        out: dict[str, float] = {}
        for ident in query_ids:
            if ident in self.known:
                out[ident] = max(out.get(ident, 0.0), 1.0)
                continue
            if ident.lower() in self._lower:  # core_utilization -> CORE_UTILIZATION
                for cand in self._lower[ident.lower()]:
                    out[cand] = max(out.get(cand, 0.0), 1.0)
                continue
            kind = identifier_kind(ident)
            if kind == "label":
                continue
            pool = [c for c in self._by_kind.get(kind, ()) if abs(len(c) - len(ident)) <= 3]
            for cand in difflib.get_close_matches(ident, pool, n=n, cutoff=self.cutoff):
                ratio = difflib.SequenceMatcher(None, ident, cand).ratio()
                out[cand] = max(out.get(cand, 0.0), ratio)
        return out


# --- summaries --------------------------------------------------------------------------


# --- OCR-like corruption (robustness experiment 2A) -------------------------------------


