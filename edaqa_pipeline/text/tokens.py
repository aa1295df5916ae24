"""Tokens for lexical search and term matching: the one tokenizer, stemmer and stop-word list.

``tokens`` keeps compound identifiers whole (``set_wire_rc``, ``grt-0118``, ``3.3``,
``floorplan.def``) and adds their stemmed parts (``set``, ``wire``, ``rc``), so a query for the
exact identifier and a query in words both match. Stems are English Snowball (the Snowball
project's own ``snowballstemmer`` package, cached); words with digits and words of three letters
or fewer are kept as they are. Stop words are English function words plus a few verbs every question carries.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

STOP_WORDS = frozenset(
    """
    a an the and or but if of to in on at by for with from as is are was were be been being it
    its this that these those there here which who whom whose what when where why how do does
    did done can could should would will shall may might must not no nor so than then too very
    i you he she we they me my your our their them us into over under about after before
    between through during above below up down out off again further once all any both each
    few more most other some such only own same just also use used using via per e g eg ie etc
    one want need like get make run
    """.split()
)

# A word or a compound of words joined by _ - : . (identifiers, message ids, decimals, files).
TOKEN = re.compile(r"[A-Za-z0-9µ]+(?:[_\-:.][A-Za-z0-9µ]+)*")
_PART = re.compile(r"[_\-:.]+")


@lru_cache(maxsize=1)
def _snowball():  # type: ignore[no-untyped-def]
    """The Snowball project's English stemmer, its pure-Python class named directly:
    ``snowballstemmer.stemmer("english")`` would silently switch to PyStemmer whenever that is
    importable (``bm25s[stem]`` brings it), and the stems must not depend on what else is
    installed. Not nltk's implementation: importing nltk pulls scipy.stats, scikit-learn and
    pandas (seconds of every ``edaqa ask``); this is one module. Snowball 3's English algorithm
    also changes old Porter2 stems ("added" -> "add" rather than "ad", "internal" keeps its
    word; "resizer" shares "resize"'s stem)."""
    from snowballstemmer.english_stemmer import EnglishStemmer

    return EnglishStemmer()


_STEM_LOCK = threading.Lock()  # the stemmer object keeps its working state between calls


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """English Snowball stem of a lower-case word; digits or <= 3 letters: unchanged."""
    if len(word) <= 3 or any(ch.isdigit() for ch in word):
        return word
    with _STEM_LOCK:
        return _snowball().stemWord(word)


def words(text: str) -> list[str]:
    """Lower-case word and compound tokens of ``text``, unstemmed, stop words kept."""
    return [m.group(0).lower() for m in TOKEN.finditer(text)]


def tokens(text: str) -> list[str]:
    """Search tokens: each compound whole plus its stemmed non-stop parts (module docstring)."""
    out: list[str] = []
    for token in words(text):
        parts = [p for p in _PART.split(token) if p]
        if len(parts) > 1:
            out.append(token)
        for part in parts:
            if part not in STOP_WORDS and (len(part) > 1 or part.isdigit()):
                out.append(stem(part))
    return out


def content_terms(text: str) -> list[str]:
    """Distinct stemmed content words of ``text`` in first-seen order (no compounds)."""
    seen: dict[str, None] = {}
    for token in words(text):
        for part in _PART.split(token):
            if part and part not in STOP_WORDS and (len(part) > 1 or part.isdigit()):
                seen.setdefault(stem(part), None)
    return list(seen)
