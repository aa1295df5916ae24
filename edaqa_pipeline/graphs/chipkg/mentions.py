"""Entity mentions in tool-manual sentences (commands, options, variables, files, message ids,
tools), found with the shared identifier definitions of ``edaqa_pipeline.text.identifiers`` and
canonicalised like everywhere else (``GRT-118`` -> ``GRT-0118``, ``-Max_Slew`` -> ``-max_slew``,
``./results/Floorplan.DEF`` -> ``floorplan.def``).

The only pattern of this module is the tool name (``OpenROAD``, ``TritonRoute``, ``KLayout``):
ChipKG's ``tool`` entities have no other definition in the project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from edaqa_pipeline.text.identifiers import (
    COMMAND,
    FILE_NAME,
    INLINE_CODE,
    LANGUAGE_WORDS,
    MESSAGE_ID,
    MESSAGE_ID_ANY_CASE,
    OPTION,
    SNAKE,
    VARIABLE,
    WORD,
    canonical,
    canonical_message,
    is_placeholder,
    normalise_anchor,
)

# CamelCase / mixed-case product names: OpenROAD, TritonRoute, KLayout, OpenSTA
TOOL_NAME = re.compile(
    r"(?<![\w-])((?:[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)|(?:[A-Z]{2,}[a-z][A-Za-z0-9]*)|"
    r"(?:[A-Z][a-z]+[A-Z]{2,}[A-Za-z0-9]*))(?![\w-])"
)
# mixed-case words that are not EDA tools
NOT_TOOLS = frozenset({"GitHub", "JavaScript", "TypeScript", "YouTube", "macOS", "iOS", "PhD", "McDonald"})


@dataclass(frozen=True)
class Mention:
    surface: str  # as written (without backticks)
    entity_type: str
    canonical: str
    start: int  # character offset in the sentence (for "before the verb" decisions)


def scoped_option(option: str, scope: str) -> str:
    """Canonical form of an option: ``cmd -opt`` inside a command's section, else ``-opt``."""
    opt = canonical(option)
    return f"{scope} {opt}" if scope else opt


def _is_word(name: str) -> bool:
    return bool(name) and not is_placeholder(name) and name not in LANGUAGE_WORDS


def classify_code(span: str, scope: str = "") -> list[tuple[str, str, str]]:
    """(surface, type, canonical) for the entities an inline code span names.

    ``place_pins -random`` names the command and its option; ``-buf_list`` alone is an option
    (scoped by the section's command); ``PLACE_DENSITY`` a variable; ``floorplan.def`` a file.
    """
    words = span.strip().split()
    if not words:
        return []
    first = words[0].rstrip("();,")
    if MESSAGE_ID_ANY_CASE.fullmatch(first):
        return [(first, "message", canonical_message(first))]
    if OPTION.fullmatch(first):
        return [] if is_placeholder(first) else [(first, "option", scoped_option(first, scope))]
    if VARIABLE.fullmatch(first):
        return [(first, "variable", canonical(first))]
    name = normalise_anchor(first)
    if FILE_NAME.fullmatch(first.rsplit("/", 1)[-1]):
        return [(first, "file", name)] if not is_placeholder(name) else []
    if not _is_word(name):
        return []
    if COMMAND.fullmatch(name):
        out = [(words[0].rstrip(";,"), "command", name)]
        out += [(f"{first} {w}", "option", scoped_option(w, name)) for w in words[1:]
                if OPTION.fullmatch(w) and not is_placeholder(w)]
        return out
    if WORD.match(first) and len(first) <= 24:
        return [(first, "tool", name)]
    return []


def unique(found: list[Mention]) -> list[Mention]:
    """In text order, one mention per (type, canonical)."""
    found.sort(key=lambda x: x.start)
    seen: set[tuple[str, str]] = set()
    out = []
    for mt in found:
        key = (mt.entity_type, mt.canonical)
        if key not in seen:
            seen.add(key)
            out.append(mt)
    return out


def manual_mentions(text: str, scope: str = "") -> list[Mention]:
    """Entities of a tool-manual sentence: inline code first, then bare identifiers and tools
    (a bare ``-option`` counts only inside a command's section)."""
    found: list[Mention] = []
    masked = list(text)
    for m in INLINE_CODE.finditer(text):
        a, b = m.span()
        masked[a:b] = " " * (b - a)
        found += [Mention(s, t, c, m.start()) for s, t, c in classify_code(m.group(1), scope)]
    rest = "".join(masked)
    for m in MESSAGE_ID.finditer(rest):
        found.append(Mention(m.group(0), "message", canonical_message(m.group(0)), m.start()))
    for m in VARIABLE.finditer(rest):
        if not MESSAGE_ID.fullmatch(m.group(1)):
            found.append(Mention(m.group(1), "variable", m.group(1), m.start(1)))
    for m in SNAKE.finditer(rest):
        if _is_word(m.group(1)):
            found.append(Mention(m.group(1), "command", m.group(1), m.start(1)))
    if scope:
        for m in OPTION.finditer(rest):
            opt = m.group(1)
            if len(opt) > 2 and not is_placeholder(opt):
                found.append(Mention(opt, "option", scoped_option(opt, scope), m.start(1)))
    for m in TOOL_NAME.finditer(rest):
        word = m.group(1)
        if word not in NOT_TOOLS and not VARIABLE.fullmatch(word):
            found.append(Mention(word, "tool", word.lower(), m.start(1)))
    return unique(found)
