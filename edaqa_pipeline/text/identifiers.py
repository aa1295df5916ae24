"""The one definition of an EDA identifier: commands, -options, ORFS variables, message ids,
file names, API names and label references, with their canonical forms.

Every extractor (typed artifacts, anchors, the element identifier view, ChipKG mentions), every
retriever's query analysis and the answer validation use these patterns, so that they agree on
what a command or an option is:

==============  ==============================  ========================================
kind            examples in text                canonical form
==============  ==============================  ========================================
command         ``global_route``, `tapcell -x`  lower case (``global_route``)
option          ``-max_length``, ``--verbose``  lower case, one dash (``-max_length``)
qualified       ``place_pin -layer``            ``place_pin -layer`` (option of command)
variable        ``CORE_UTILIZATION``, ``$X_Y``  upper case, no ``$``
message id      ``GRT-243``, ``[WARNING GRT-0243]`` ``GRT-0243`` (prefix + 4 digits)
file            ``./results/Floorplan.DEF``     lower-case basename (``floorplan.def``)
api             ``dbBlock::getName``            lower case (``dbblock::getname``)
label           "Table 3", "Figure 2", "3.2"    ``table:3``, ``figure:2``, ``section:3.2``
==============  ==============================  ========================================

Commands are snake_case words anywhere in prose, the first word of an inline code span that
is snake_case or followed by an option, or the first word of a code line; options in a code
line are qualified by that line's command, options elsewhere by the scope command (the command
the section documents) when there is one. Placeholders (``my_design``, ``<file>``) and
language words (``int``, ``proc``) never become identifiers.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

# Inline code spans: `...` (single or double backticks).
INLINE_CODE = re.compile(r"(?<!`)``?([^`\n]+?)``?(?!`)")
# A whole word that names a command: snake_case with at least one underscore.
COMMAND = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
# snake_case words inside prose (not part of a path, a file name or an option).
SNAKE = re.compile(r"(?<![\w$:/.\-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w/])(?!\.\w)")
# Options: -name or --name, not a negative number, not inside a word or a path.
OPTION = re.compile(r"(?<![\w\-/])(--?[a-zA-Z][A-Za-z0-9_]*)(?![\w\-])")
# ORFS / environment variables: UPPER_CASE with an underscore, optionally written $NAME.
VARIABLE = re.compile(r"(?<![\w])\$?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w])")
# Message ids such as GRT-0243, PDN-0042, [WARNING CTS-0107]; queries may write grt-118.
MESSAGE_ID = re.compile(r"\b[A-Z]{2,5}-\d{3,5}\b")
MESSAGE_ID_ANY_CASE = re.compile(r"\b[A-Za-z]{2,5}-\d{3,5}\b")
# circuit-spec port signals (``DATA_I``, ``WB_ADR_O(31:0)``): the ChipKG's signal entities
PORT_SIGNAL = re.compile(
    r"(?<![\w$-])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:I|O|IO))(?:\(\s*[\w.:]*\s*\))?(?![\w-])"
)
API = re.compile(r"\b([A-Za-z_]\w*(?:::\w+)+)")
# The first word of a code line that can be a command (``tapcell`` has no underscore).
WORD = re.compile(r"^[a-z][a-z0-9_]{2,}$")
DIAGNOSTIC_PREFIX = re.compile(
    r"(^|\[)\s*(ERROR|WARNING|WARN|Error|Warning|FATAL|Fatal|CRITICAL)\b[:\] ]"
)
FILE_EXTENSIONS = (
    "def|lef|tlef|v|sv|vh|vg|tcl|sdc|lib|liberty|gds|gds2|oas|spef|odb|py|cfg|json|yaml|yml|mk|"
    "sh|txt|csv|rpt|log|upf|cdl|sp|spice|db|vcd|saif|rcx_rules|guide|mak|pdf|xml|cpp|h|hpp|"
    "cmake"
)
# File names; the extension is matched case-insensitively (``NanGate.LEF``, ``top.DEF``).
FILE_NAME = re.compile(
    rf"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.(?i:{FILE_EXTENSIONS}))(?![\w-])"
)
URL = re.compile(r"https?://\S+|www\.\S+")
MD_LINK_TARGET = re.compile(r"\]\([^)]*\)")
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
ID_KINDS = ("command", "option", "qualified", "variable", "message", "file", "api", "label")

# Language keywords and type aliases that must never become anchors (Tcl, Python, shell, C).
LANGUAGE_WORDS = frozenset(
    """
    int integer string str list float double bool boolean dict tuple void char none null true
    false object array number real any auto long short unsigned signed byte bytes set
    puts proc if else elseif foreach for while return source expr lindex llength lappend
    global upvar incr info catch error eval namespace package exit open close file glob
    format regexp regsub switch break continue unset append split join lsort lsearch lrange
    concat subst uplevel variable after exec cd pwd
    import from def class print in with as lambda pass not and or is self yield try except
    finally raise assert del nonlocal async await
    echo export make sudo cmake git python python3 pip bash sh cat ls rm cp mv mkdir
    """.split()
)

# Generic placeholder names used in examples; they link unrelated documents if used as anchors.
PLACEHOLDER_STEMS = frozenset(
    """
    foo bar baz qux example examples sample test tests my_design mydesign design top input
    output in out file files filename your_design name value x y z tmp temp abc xyz dummy
    path dir my_file myfile some_file script run results result data
    """.split()
)


def is_command(word: str) -> bool:
    """``word`` as a whole is a snake_case command name."""
    return bool(COMMAND.fullmatch(word))


def is_option(word: str) -> bool:
    return bool(OPTION.fullmatch(word))


def inline_code_spans(text: str) -> list[str]:
    return [m.group(1).strip() for m in INLINE_CODE.finditer(text) if m.group(1).strip()]


def file_names(text: str) -> list[str]:
    """File names mentioned in ``text`` (URLs and Markdown link targets excluded)."""
    cleaned = MD_LINK_TARGET.sub("]", URL.sub(" ", text))
    return [m.group(1) for m in FILE_NAME.finditer(cleaned)]


def normalise_anchor(raw: str) -> str:
    """Canonical command/file form: strip quotes, backticks, brackets and ``()``, lower-case,
    files by basename (the paper's ``norm(a_r)``).

    >>> normalise_anchor("`Define_PDN_Grid()`")
    'define_pdn_grid'
    >>> normalise_anchor("./results/Floorplan.DEF")
    'floorplan.def'
    """
    text = raw.strip().strip("`'\"[]{}").strip()
    text = re.sub(r"\(\s*\)$", "", text)
    text = text.split()[0].lower() if text.split() else ""
    base = text.rsplit("/", 1)[-1]
    if FILE_NAME.fullmatch(base):
        text = base
    return text


# Placeholder options of boilerplate synopses (``-param1``, ``-option``, ``-flag2``).
_PLACEHOLDER_OPTION = re.compile(r"--?(?:param|option|opt|flag|switch|arg)\d*")


def is_placeholder(anchor: str) -> bool:
    """Generic example names (``foo.tcl``, ``<file>``, ``$var``, ``-param2``) that are never
    identifiers."""
    if not anchor or anchor.startswith("<") or anchor.endswith(">") or "..." in anchor:
        return True
    if _PLACEHOLDER_OPTION.fullmatch(anchor):
        return True
    if "$" in anchor or "*" in anchor or "{" in anchor:
        return True
    stem = anchor.rsplit(".", 1)[0] if "." in anchor else anchor
    return stem in PLACEHOLDER_STEMS or anchor in PLACEHOLDER_STEMS


def canonical_message(raw: str) -> str:
    """``grt-118`` -> ``GRT-0118``."""
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
    if re.fullmatch(r"[A-Za-z]{2,5}-\d{1,5}", text):
        return canonical_message(text)
    if " -" in text:
        cmd, _, opt = text.partition(" -")
        return f"{cmd.strip().lower()} -{opt.strip().lower().lstrip('-')}"
    if text.startswith("-"):
        return "-" + text.lstrip("-").lower()
    if "::" in text:
        return text.lower()
    if VARIABLE.fullmatch(text):
        return text.lstrip("$")
    if FILE_NAME.fullmatch(text.rsplit("/", 1)[-1]):
        return normalise_anchor(text)
    return text.lower()


def identifier_kind(canon: str) -> str:
    """One of ``ID_KINDS`` for a canonical identifier."""
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


def line_command(line: str) -> str:
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
            cmd = line_command(line)
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

    clean = MD_LINK_TARGET.sub("]", URL.sub(" ", text))  # link targets are not identifiers
    commands: list[str] = []
    if code:
        current = ""
        continued = False
        for line in clean.split("\n"):
            if not continued and not line.startswith((" ", "\t")):
                cmd = line_command(line)
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
    """Identifiers of a query: the document rules plus any-case message ids, label
    references and options qualified by the commands the query names."""
    ids = extract_identifiers(query, query=True)
    ids += [canonical_message(m) for m in MESSAGE_ID_ANY_CASE.findall(query)]
    ids += [label for _, label, _, _ in label_refs(query)]
    return list(dict.fromkeys(ids))


def quoted_words(query: str) -> list[str]:
    """Single words a query writes in backticks (`restructure`) that the rules above do not
    take as identifiers (a lone backticked word is a command only in snake_case, since in a
    document `layer` is as often a value). In a question the backticks say the word is a
    name; whether it is one only an index can tell, so these are matched exactly
    (``IdentifierVocabulary.known_words``), never fuzzily."""
    taken = set(query_identifiers(query))
    out: dict[str, None] = {}
    for span in INLINE_CODE.findall(MD_LINK_TARGET.sub("]", URL.sub(" ", query))):
        words = span.strip().split()
        if len(words) == 1 and WORD.match(words[0].rstrip("();,")):
            word = canonical(words[0])
            if word and word not in taken and _ok_command(word):
                out.setdefault(word, None)
    return list(out)


class IdentifierVocabulary:
    """Canonical identifiers of an index, grouped by kind, for exact and fuzzy lookup
    (difflib ratio >= ``cutoff`` within the same kind and +-3 characters)."""

    def __init__(self, identifiers: Iterable[str], cutoff: float = 0.8) -> None:
        self.known = set(identifiers)
        self.cutoff = cutoff
        self._lower: dict[str, list[str]] = {}
        self._by_kind: dict[str, list[str]] = {}
        for ident in sorted(self.known):
            self._lower.setdefault(ident.lower(), []).append(ident)
            self._by_kind.setdefault(identifier_kind(ident), []).append(ident)

    def known_words(self, words: Iterable[str]) -> list[str]:
        """The words that are identifiers of this index, exactly (see ``quoted_words``)."""
        return [w for w in words if w in self.known]

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
