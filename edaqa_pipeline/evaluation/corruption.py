"""OCR-like corruption of identifiers (robustness experiment 2A): seeded character
substitutions on every identifier-like token of a text."""

from __future__ import annotations

import random
import re

from edaqa_pipeline.text import identifiers

OCR_SUBS = {
    "l": "1", "1": "l", "i": "l", "o": "0", "0": "o", "O": "0", "s": "5", "S": "5", "e": "c",
    "a": "o", "g": "q", "B": "8", "m": "rn", "_": " ", "-": "~", "t": "f", "n": "h", "c": "e",
}  # fmt: skip


def corrupt_identifier(ident: str, rng: random.Random) -> str:
    """One or two OCR-like character confusions (l->1, o->0, m->rn, _->space, ...)."""
    chars = list(ident)
    positions = [i for i, ch in enumerate(chars) if ch in OCR_SUBS]
    if not positions:
        return ident + "~"
    for pos in rng.sample(positions, k=min(len(positions), 1 + (len(ident) > 10))):
        chars[pos] = OCR_SUBS[chars[pos]]
    return "".join(chars)


def _union(*patterns: re.Pattern[str]) -> re.Pattern[str]:
    """One pattern matching any of ``patterns`` (each keeps its own flags)."""
    parts = [f"(?i:{p.pattern})" if p.flags & re.IGNORECASE else f"(?:{p.pattern})" for p in patterns]
    return re.compile("|".join(parts))


# Identifier-like tokens, by the shared definitions (``text.identifiers``): options, snake_case
# commands and parameters, UPPER_CASE variables, message ids, table/figure/section labels.
ANCHOR_TOKEN = _union(identifiers.OPTION, identifiers.SNAKE, identifiers.VARIABLE,
                      identifiers.MESSAGE_ID, identifiers.LABEL_REF)


def corrupt_text(text: str, rate: float, rng: random.Random) -> str:
    """Corrupt each identifier-like token of ``text`` with probability ``rate``: commands,
    options, parameter names, message ids and table/figure/section labels (paper Exp. 2A)."""
    if rate <= 0:
        return text

    def repl(match: re.Match[str]) -> str:
        token = match.group(0)
        return corrupt_identifier(token, rng) if rng.random() < rate else token

    return ANCHOR_TOKEN.sub(repl, text)
