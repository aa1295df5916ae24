"""Checking a claim against the evidence it cites.

Two checks, used by both answerers and by the evaluation's offline citation metrics:

* **Grounding** (:func:`ungrounded_terms`, hard): every identifier the claim names (commands,
  ``-options``, variables, message ids, file names: ``text.identifiers.extract_identifiers``,
  the project's one definition) and every number must occur in the cited items' text. A
  number occurs when the same digits appear as a number (``5`` is not found in ``0.5`` or
  ``15``); an identifier when its canonical form is among the cited text's identifiers (prose
  or code reading) or occurs in it case-insensitively. A claim that fails is not shown.
* **Support** (:func:`support`, soft, ALCE-style entailment approximated lexically): the share
  of the claim's content terms (``text.tokens.content_terms``: stemmed, stop words removed)
  that occur in the cited text, and 0 when grounding fails. A claim is *supported* at
  ``SUPPORT_THRESHOLD``; an LLM judge replaces this in the evaluation when configured.

Citation markers the model may leave in a claim (``[E2]``, ``(E1, E3)``, ``[cts.md:L3-L5]``)
are removed before checking (:func:`clean_claim`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
from functools import lru_cache

from edaqa_pipeline.text.identifiers import extract_identifiers
from edaqa_pipeline.text.tokens import content_terms, words

SUPPORT_THRESHOLD = 0.6

_ID_LIST = r"E\d+(?:\s*[,;]\s*E\d+)*"
_MARKERS = re.compile(
    rf"\s*(?:\[\s*{_ID_LIST}\s*\]|\(\s*{_ID_LIST}\s*\)|\[[^\[\]\n]*?:(?:L\d+(?:-L\d+)?|p\d+)\])"
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def clean_claim(text: str) -> str:
    """The claim without citation markers and with its whitespace collapsed."""
    return " ".join(_MARKERS.sub("", text).split())


def same_claim_key(text: str) -> str:
    """What two claims that say the same thing share: the words, without case, quotes,
    backticks or trailing punctuation (a model that repeats a sentence may change its quotes)."""
    return " ".join(re.sub(r"[\"'`\u2018\u2019\u201c\u201d]", "", clean_claim(text)).lower().rstrip(".!?:;").split())


REPEAT_OVERLAP = 0.85  # a claim whose content terms are this much said already adds nothing


def unsaid_claims(said: Sequence[str], candidates: Sequence[str], room: int) -> list[int]:
    """Indexes of at most ``room`` of ``candidates``, in order, that say something ``said``
    and the candidates taken before them do not: not the same claim (:func:`same_claim_key`)
    and under ``REPEAT_OVERLAP`` of their content terms already stated. How a model's answer
    is filled with the extractive answer's quotes (``answer.py``)."""
    keys = {same_claim_key(text) for text in said}
    terms = {term for text in said for term in content_terms(text)}
    taken: list[int] = []
    for index, text in enumerate(candidates):
        if len(taken) >= room:
            break
        own = set(content_terms(text))
        if same_claim_key(text) in keys or (own and len(own & terms) > REPEAT_OVERLAP * len(own)):
            continue
        taken.append(index)
        keys.add(same_claim_key(text))
        terms |= own
    return taken


def claim_numbers(text: str) -> list[str]:
    """Numbers of ``text``: the tokens (``text.tokens.words``) that are plain numbers."""
    return list(dict.fromkeys(w for w in words(text) if _NUMBER.fullmatch(w)))


def number_occurs(number: str, text: str) -> bool:
    return re.search(rf"(?<![\d.]){re.escape(number)}(?!\d|\.\d)", text) is not None


@lru_cache(maxsize=4096)
def identifiers_of(text: str) -> frozenset[str]:
    """Canonical identifiers of evidence text, read both as prose and as code (cached: every
    claim citing an item reads the same text, and an evaluation answers from the same chunks
    for every method; the rules take about 0.2 ms a text)."""
    return frozenset(extract_identifiers(text)) | frozenset(extract_identifiers(text, code=True))


def _whole_in(term: str, text_lower: str) -> bool:
    """``term`` as a whole identifier of lower-cased text (``-r`` is not in "non-routable",
    ``-sink_cluster`` not in ``-sink_clustering_size``)."""
    return re.search(rf"(?<![\w-]){re.escape(term.lower())}(?![\w-])", text_lower) is not None


def identifier_occurs(ident: str, known: Set[str], text_lower: str) -> bool:
    if ident in known or _whole_in(ident, text_lower):
        return True
    if " -" in ident:  # "cmd -option": both parts present, each whole
        command, _, option = ident.partition(" -")
        return _whole_in(command, text_lower) and _whole_in(f"-{option}", text_lower)
    return False


def ungrounded_terms(claim: str, cited_text: str, known: Set[str] | None = None) -> list[str]:
    """The claim's identifiers and numbers that the cited text does not contain."""
    text = clean_claim(claim)
    known = identifiers_of(cited_text) if known is None else known
    lower = cited_text.lower()
    missing = [ident for ident in extract_identifiers(text)
               if not identifier_occurs(ident, known, lower)]
    missing += [n for n in claim_numbers(text) if not number_occurs(n, cited_text)]
    return missing


def support(claim: str, cited_text: str) -> float:
    """Lexical entailment score in [0, 1] (see the module docstring)."""
    text = clean_claim(claim)
    if not text or ungrounded_terms(text, cited_text):
        return 0.0
    terms = content_terms(text)
    if not terms:
        return 0.0
    present = set(content_terms(cited_text))
    return sum(t in present for t in terms) / len(terms)


def supported(claim: str, cited_text: str) -> bool:
    return support(claim, cited_text) >= SUPPORT_THRESHOLD


def best_lines(claim: str, lines: Sequence[str]) -> tuple[int, int] | None:
    """The smallest run of ``lines`` (offsets first..last) holding the claim's terms.

    Terms are the claim's identifiers, numbers and content terms; the run starts and ends at
    lines that contain some, and grows until it covers as many as the whole item does.
    None when no line shares a term (cite the whole item).
    """
    text = clean_claim(claim)
    wanted = set(content_terms(text)) | {n for n in claim_numbers(text)}
    wanted |= {i.lower() for i in extract_identifiers(text)}
    if not wanted:
        return None
    per_line = []
    for line in lines:
        low = line.lower()
        found = {t for t in wanted if t in low} | (set(content_terms(line)) & wanted)
        per_line.append(found)
    total = set().union(*per_line) if per_line else set()
    if not total:
        return None
    best: tuple[int, int] | None = None
    for first, found in enumerate(per_line):
        if not found:
            continue
        covered: set[str] = set()
        for last in range(first, len(per_line)):
            covered |= per_line[last]
            if covered >= total:
                if best is None or last - first < best[1] - best[0]:
                    best = (first, last)
                break
    return best
