"""Atomic-ROUGE: precision/recall of an answer's atomic facts against reference facts.

ROUGE rewards wording; for EDA answers what matters is whether each stated fact (a command, an
option, a value) is right. The generated answer is decomposed into facts, each fact is matched
against the reference's ``atomic_facts``, and precision = matched generated facts / generated
facts, recall = covered reference facts / reference facts.

Offline the decomposition and the judge are deterministic and documented here:

Decomposition (:func:`split_facts`): a code block (the parser's ``code`` lines,
``parsing.lines``) is one fact; every other
line is split into sentences at ``.``/``!``/``?``/``;`` followed by whitespace (not after
``e.g.``, ``i.e.``, ``etc.``, ``vs.``, ``cf.``, ``approx.`` or a single letter), and leading
bullets (``-``, ``*``, ``+``, ``1.``, ``1)``) and heading marks are removed. Pieces without a
letter or digit are dropped.

Judge (:func:`facts_match`), for a generated fact G and a reference fact R:

1. Key-term gate: every key term of R must occur in G. Key terms are numbers, backticked tokens,
   snake_case identifiers, ``-options`` and ``ABC-1234`` message ids. "Occurs" is
   case-insensitive, with word boundaries (``-net`` is not found in ``-netlist``, ``5`` not in
   ``0.5``).
2. Similarity: token-overlap F1 of the two facts >= ``LEXICAL_F1_THRESHOLD`` (0.5; tokens are
   rouge-score's lower-cased, Porter-stemmed alphanumeric tokens minus a short stopword list),
   OR, when an ``embed`` function is given, cosine similarity of the two embeddings >=
   ``EMBED_COSINE_THRESHOLD`` (0.8).

With an LLM judge (``judge.AnswerJudge``) both steps follow ChipMind's definition: the judge
model decomposes the generated answer into atomic facts (``atomic_facts`` task) and decides
which of them are semantically equivalent to which reference facts (``fact_match``, one call
per question).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from edaqa_pipeline.parsing.lines import markdown_line_kinds
from edaqa_pipeline.text.tokens import STOP_WORDS

if TYPE_CHECKING:
    from edaqa_pipeline.evaluation.judge import AnswerJudge

Embed = Callable[[list[str]], np.ndarray]

LEXICAL_F1_THRESHOLD = 0.5
EMBED_COSINE_THRESHOLD = 0.8

# Function words ignored by the token-overlap F1: the project's one stop list.
STOPWORDS = STOP_WORDS

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#+)\s+")
_SENT_END = re.compile(r"(?<=[.!?;])\s+")
_ABBREV = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx)\.|(?:^|\s)[A-Za-z]\.)$", re.IGNORECASE)
_ALNUM = re.compile(r"[A-Za-z0-9]")

_KEY_PATTERNS = (
    re.compile(r"`([^`\n]+)`"),  # backticked tokens
    re.compile(r"\b[A-Z][A-Z0-9]+-\d{3,5}\b"),  # message ids such as GRT-0001
    re.compile(r"(?<![\w-])-[A-Za-z][\w-]*"),  # -options
    re.compile(r"\b[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+\b"),  # snake_case identifiers
    re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w]|\.\d)"),  # numbers
)


def _sentences(line: str) -> list[str]:
    pieces: list[str] = []
    buf = ""
    for part in _SENT_END.split(line):
        buf = f"{buf} {part}" if buf else part
        if not _ABBREV.search(buf):
            pieces.append(buf)
            buf = ""
    if buf:
        pieces.append(buf)
    return pieces


def split_facts(text: str) -> list[str]:
    """Decompose an answer into atomic facts (see the module docstring for the rules)."""
    facts: list[str] = []
    code: list[str] = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for raw, kind in zip(lines, markdown_line_kinds("\n".join(lines)), strict=True):
        if kind == "code":
            code.append(raw)
            continue
        if code:  # a code block ends (its closing fence, or the next non-code line)
            facts.append("\n".join(code).strip())
            code = []
        if kind == "code_fence":
            continue
        line = _BULLET.sub("", raw).strip()
        facts.extend(s.strip() for s in _sentences(line))
    if code:  # unterminated fence: keep what it had
        facts.append("\n".join(code).strip())
    return [f for f in facts if _ALNUM.search(f)]


def key_terms(fact: str) -> list[str]:
    """Numbers and identifiers that a matching fact must repeat, in order of appearance."""
    terms: list[str] = []
    for pattern in _KEY_PATTERNS:
        for m in pattern.finditer(fact):
            term = (m.group(1) if m.groups() else m.group(0)).strip()
            if term:
                terms.append(term)
    return list(dict.fromkeys(terms))


def term_occurs(term: str, text: str) -> bool:
    """Case-insensitive occurrence of ``term`` in ``text`` with word boundaries.

    A term that starts with a word character or ``-`` must not follow a word character (a
    number also not a ``.``); one that ends with a word character must not be followed by a
    word character or by ``.digit``.
    """
    left = ""
    if term[:1].isdigit():
        left = r"(?<![\w.])"
    elif term[:1] == "-" or re.match(r"\w", term[:1]):
        left = r"(?<!\w)"
    right = r"(?!\w|\.\d)" if re.match(r"\w", term[-1:]) else ""
    return re.search(left + re.escape(term) + right, text, flags=re.IGNORECASE) is not None


@lru_cache(maxsize=1)
def _rouge_tokenizers():  # type: ignore[no-untyped-def]
    """rouge-score's own tokenizer, plain and stemmed: Atomic-ROUGE must tokenise exactly as
    the ROUGE it extends, so it uses that library rather than the project's Snowball tokens."""
    from rouge_score.tokenizers import DefaultTokenizer

    return DefaultTokenizer(use_stemmer=False), DefaultTokenizer(use_stemmer=True)


def content_tokens(text: str) -> list[str]:
    """rouge-score's tokens (lower-cased alphanumeric runs, words > 3 chars Porter-stemmed),
    with stopwords removed before stemming."""
    plain, stemmed = _rouge_tokenizers()
    return stemmed.tokenize(" ".join(w for w in plain.tokenize(text) if w not in STOPWORDS))


def token_f1(a: str, b: str) -> float:
    """Bag-of-tokens F1 between two texts (0.0 when either has no content token)."""
    ta, tb = Counter(content_tokens(a)), Counter(content_tokens(b))
    common = sum((ta & tb).values())
    if not common:
        return 0.0
    p, r = common / sum(ta.values()), common / sum(tb.values())
    return 2 * p * r / (p + r)


def facts_match(generated: str, reference: str, *, cosine: float | None = None) -> bool:
    """The offline judge: key-term gate AND (token F1 or embedding cosine above threshold)."""
    if not all(term_occurs(t, generated) for t in key_terms(reference)):
        return False
    if token_f1(generated, reference) >= LEXICAL_F1_THRESHOLD:
        return True
    return cosine is not None and cosine >= EMBED_COSINE_THRESHOLD


@dataclass(frozen=True)
class AtomicScore:
    precision: float
    recall: float
    f1: float
    n_generated: int
    n_reference: int


class MemoEmbed:
    """An ``Embed`` that encodes each distinct text once per evaluation.

    Every method is scored against the same reference facts, and most methods' answers share
    sentences, so one evaluation asks for the same texts many times over (the sample report:
    20 methods x 14 questions). Pass an ``embed`` whose vectors do not depend on the other
    texts of a call (``partial(encoder.encode, stable=True)``): then a text's vector, and
    every score, is the same whichever call first asked for it and whichever methods ran."""

    def __init__(self, embed: Embed) -> None:
        self._embed = embed
        self._vectors: dict[str, np.ndarray] = {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            for text, vector in zip(missing, np.asarray(self._embed(missing), dtype=float), strict=True):
                self._vectors[text] = vector
        return np.stack([self._vectors[t] for t in texts])


def _cosines(embed: Embed, gen: list[str], ref: list[str]) -> np.ndarray:
    vecs = np.asarray(embed(gen + ref), dtype=float)
    vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    return vecs[: len(gen)] @ vecs[len(gen) :].T


def _offline_matches(gen: list[str], ref: list[str], embed: Embed | None) -> list[list[bool]]:
    """:func:`facts_match` for every (generated, reference) pair, embedding only when a pair
    passes the key-term gate and fails the lexical test (the only case the cosine decides)."""
    gated = [[all(term_occurs(t, g) for t in key_terms(r)) for r in ref] for g in gen]
    lexical = [[gated[i][j] and token_f1(g, r) >= LEXICAL_F1_THRESHOLD for j, r in enumerate(ref)]
               for i, g in enumerate(gen)]
    undecided = any(gated[i][j] and not lexical[i][j] for i in range(len(gen)) for j in range(len(ref)))
    if embed is None or not undecided:
        return lexical
    cos = _cosines(embed, gen, ref)
    return [[lexical[i][j] or (gated[i][j] and float(cos[i, j]) >= EMBED_COSINE_THRESHOLD)
             for j in range(len(ref))] for i in range(len(gen))]


def atomic_rouge(
    answer: str,
    reference_facts: Sequence[str],
    *,
    embed: Embed | None = None,
    judge: AnswerJudge | None = None,
    question: str = "",
) -> AtomicScore | None:
    """Atomic precision/recall/F1 of ``answer`` against ``reference_facts``.

    None when there are no reference facts. An answer with no facts scores 0/0/0. With
    ``judge`` the LLM decomposes and matches (``embed`` is then unused).
    """
    ref = [f for f in reference_facts if f.strip()]
    if not ref:
        return None
    gen = judge.facts(answer) if judge is not None else split_facts(answer)
    if not gen:
        return AtomicScore(0.0, 0.0, 0.0, 0, len(ref))
    if judge is not None:
        match = judge.match(question, gen, ref)
    else:
        match = _offline_matches(gen, ref, embed)
    precision = sum(any(row) for row in match) / len(gen)
    recall = sum(any(match[i][j] for i in range(len(gen))) for j in range(len(ref))) / len(ref)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return AtomicScore(precision, recall, f1, len(gen), len(ref))
