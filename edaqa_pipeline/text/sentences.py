"""Sentence splitting for prose (one splitter for extraction, provenance and answers)."""

from __future__ import annotations

import re

# Sentence end: end punctuation followed by space + capital / backtick / bracket / digit.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\[(\"0-9])")
_PARAGRAPH = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+[.)])\s)")


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences; paragraphs and list items always split."""
    pieces: list[str] = []
    for para in _PARAGRAPH.split(text):
        para = para.strip()
        if para:
            pieces.extend(s.strip() for s in SENTENCE_END.split(para) if s.strip())
    return pieces
