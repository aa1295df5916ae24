"""OCR-like corruption of identifiers (robustness experiment 2A): seeded character
substitutions on every identifier-like token of a text."""

from __future__ import annotations

import random
import re

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


ANCHOR_TOKEN = re.compile(
    r"(?<![\w\-])(--?[a-zA-Z][\w]+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
    r"|[A-Z]{2,5}-\d{3,5}|(?:Table|Figure|Fig\.|Section)\s+\d+(?:\.\d+)*)(?![\w])"
)


def corrupt_text(text: str, rate: float, rng: random.Random) -> str:
    """Corrupt each identifier-like token of ``text`` with probability ``rate``: commands,
    options, parameter names, message ids and table/figure/section labels (paper Exp. 2A)."""
    if rate <= 0:
        return text

    def repl(match: re.Match[str]) -> str:
        token = match.group(0)
        return corrupt_identifier(token, rng) if rng.random() < rate else token

    return ANCHOR_TOKEN.sub(repl, text)
