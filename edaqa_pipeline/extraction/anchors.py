"""Canonical anchors: the command or file an occurrence is about, and the rule that picked it.

``normalise_anchor`` is the ``norm(a_r)`` of the paper: occurrences whose normalised anchors
are equal can be linked across documents. ``is_linkable`` is the linker's admissibility rule:
placeholders (``<file>``, ``foo``, ``design.def``-style examples) and language words (``int``,
``string``, Tcl/Python keywords) never link documents.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from edaqa_pipeline.extraction.artifacts import command_name
from edaqa_pipeline.text.identifiers import (
    COMMAND,
    LANGUAGE_WORDS,
    is_placeholder,
    normalise_anchor,
)

_TCL_LEADING = re.compile(r"^\s*(?:#.*|\$?\w+\s*=.*|)$")


def is_language_word(anchor: str) -> bool:
    return anchor in LANGUAGE_WORDS


def rejection_reason(anchor: str) -> str | None:
    """Why an anchor may not link documents (None when it may)."""
    if is_placeholder(anchor):
        return "placeholder_anchor"
    if is_language_word(anchor):
        return "language_type_alias"
    return None


def _code_command(code: str) -> str | None:
    """First command invoked in a code block (comments, assignments, language words skipped)."""
    for line in code.split("\n"):
        if _TCL_LEADING.match(line):
            continue
        word = line.strip().split()[0].rstrip(";")
        if word in LANGUAGE_WORDS or word.startswith(("$", "#", "-", "[", "<")):
            continue
        if COMMAND.fullmatch(word) or (word.isidentifier() and word.islower() and len(word) > 2):
            return word
        return None
    return None


def choose_anchor(artifacts: list[dict[str, Any]], section_path: list[str]) -> tuple[str, str, str]:
    """Pick (anchor, kind, rule) for one occurrence from its artifacts, in this order:

    1. ``code.first_command``: the first command of its first code block;
    2. ``heading.command``: a command named in the section heading;
    3. ``mentions.most_frequent_command``: the command most mentioned inline (ties: first seen);
    4. ``mentions.file``: the first file name mentioned;
    5. ``section``: no command or file; the anchor is the section path (never linked).
    """
    for art in artifacts:
        if art["artifact_type"] == "codeblock":
            cmd = _code_command(art["content"])
            if cmd and rejection_reason(normalise_anchor(cmd)) is None:
                return normalise_anchor(cmd), "command", "code.first_command"
    if section_path:
        for word in re.findall(r"[A-Za-z_][\w]*", section_path[-1]):
            if COMMAND.fullmatch(word):
                return normalise_anchor(word), "command", "heading.command"
    counts: Counter[str] = Counter()
    order: dict[str, int] = {}
    for art in artifacts:
        if art["artifact_type"] == "inline_command":
            cmd = command_name(art["content"])
            if cmd:
                norm = normalise_anchor(cmd)
                counts[norm] += 1
                order.setdefault(norm, len(order))
    if counts:
        best = sorted(counts, key=lambda a: (-counts[a], order[a]))[0]
        return best, "command", "mentions.most_frequent_command"
    for art in artifacts:
        if art["artifact_type"] == "file":
            return normalise_anchor(art["content"]), "file", "mentions.file"
    return "section:" + " > ".join(section_path), "section", "section"
