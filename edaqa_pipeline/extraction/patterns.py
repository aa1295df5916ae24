"""Lexical patterns shared by the extractors: commands, options, files, message ids, sentences.

Kept in one place so that the artifact extractor, the anchor normaliser and the linker agree
on what a command or a file name looks like.
"""

from __future__ import annotations

import re

# Inline code spans: `...` (single or double backticks).
INLINE_CODE = re.compile(r"(?<!`)``?([^`\n]+?)``?(?!`)")
# A command name: snake_case with at least one underscore, or a known tool word.
COMMAND = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
OPTION = re.compile(r"^-[a-zA-Z][A-Za-z0-9_]*$")
# Message ids such as GRT-0243, PDN-0042, [WARNING CTS-0107].
MESSAGE_ID = re.compile(r"\b[A-Z]{2,5}-\d{3,5}\b")
DIAGNOSTIC_PREFIX = re.compile(
    r"(^|\[)\s*(ERROR|WARNING|WARN|Error|Warning|FATAL|Fatal|CRITICAL)\b[:\] ]"
)
FILE_EXTENSIONS = (
    "def|lef|tlef|v|sv|vh|vg|tcl|sdc|lib|liberty|gds|gds2|oas|spef|odb|py|cfg|json|yaml|yml|mk|"
    "sh|txt|csv|rpt|log|upf|cdl|sp|spice|db|vcd|saif|rcx_rules|guide|mak|pdf|xml|cpp|h|hpp|"
    "cmake"
)
FILE_NAME = re.compile(
    rf"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.(?:{FILE_EXTENSIONS}))(?![\w-])"
)
URL = re.compile(r"https?://\S+|www\.\S+")
MD_LINK_TARGET = re.compile(r"\]\([^)]*\)")
# Sentence split: end punctuation followed by space + capital/backtick/digit, or a newline list item.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\[(\"0-9])")

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


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences; list items and lines ending a sentence also split."""
    pieces: list[str] = []
    for para in re.split(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+[.)])\s)", text):
        para = para.strip()
        if not para:
            continue
        pieces.extend(s.strip() for s in SENTENCE_END.split(para) if s.strip())
    return pieces


def inline_code_spans(text: str) -> list[str]:
    return [m.group(1).strip() for m in INLINE_CODE.finditer(text) if m.group(1).strip()]


def file_names(text: str) -> list[str]:
    """File names mentioned in ``text`` (URLs and Markdown link targets excluded)."""
    cleaned = MD_LINK_TARGET.sub("]", URL.sub(" ", text))
    return [m.group(1) for m in FILE_NAME.finditer(cleaned)]
