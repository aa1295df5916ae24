"""Sentence splitting for prose (one splitter for extraction, provenance and answers).

A sentence ends at ``.``, ``!`` or ``?`` followed by space and a capital, backtick, bracket,
quote or digit; paragraphs (blank lines) and list items always split. Abbreviations do not end
a sentence: ``e.g.``, ``i.e.``, ``cf.``, ``vs.`` never, and reference or limit abbreviations
(``Fig. 3``, ``Table 2``, ``No. 5``, ``max. 3.6 V``, ``approx. 10``) not when a number follows,
so "see Fig. 3 for the circuit" and "max. 3.6 V" stay one sentence.
"""

from __future__ import annotations

import re

# Sentence end: end punctuation followed by space + capital / backtick / bracket / digit.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\[(\"0-9])")
_PARAGRAPH = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+[.)])\s)")
# abbreviations that never end a sentence
_ALWAYS = re.compile(r"\b(?:e\.g|i\.e|cf|vs|viz|resp)\.$", re.IGNORECASE)
# abbreviations that do not end a sentence when a number follows ("Fig. 3", "max. 3.6 V")
_BEFORE_NUMBER = re.compile(
    r"\b(?:Figs?|Tabs?|Eqs?|Refs?|Nos?|Sects?|Secs?|Ch|Vol|Rev|pp?|max|min|typ|approx|ca)\.$",
    re.IGNORECASE,
)


def _continues(previous: str, following: str) -> bool:
    """``previous`` ends with an abbreviation that does not end a sentence before ``following``."""
    if _ALWAYS.search(previous):
        return True
    return bool(_BEFORE_NUMBER.search(previous)) and following[:1].isdigit()


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences; paragraphs and list items always split. A sentence that
    continues past an abbreviation keeps the text between its parts exactly as written."""
    pieces: list[str] = []
    for para in _PARAGRAPH.split(text):
        para = para.strip()
        if not para:
            continue
        cuts = [0, *(m.end() for m in SENTENCE_END.finditer(para)), len(para)]
        start = 0
        for i in range(1, len(cuts)):
            part = para[start : cuts[i]].strip()
            following = para[cuts[i] :].lstrip()
            if i < len(cuts) - 1 and _continues(part, following):
                continue
            if part:
                pieces.append(part)
            start = cuts[i]
    return pieces
