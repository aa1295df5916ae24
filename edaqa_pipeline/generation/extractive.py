"""Offline answer synthesis: pick the evidence lines that best answer the question, cite them.

No LLM: the answer is made of source lines, each followed by its citation (``file.md:L12-L18``
or ``file.pdf:p3``). Segments are scored by the question's terms they contain, identifiers
(``snake_case``, ``-options``, ``ABC-1234`` ids, file names) weighing three times a plain word,
plus a small prior for higher-ranked evidence. A table row is quoted with its header; a code
block is quoted whole (up to a bound); other lines are quoted as they are. The citations always
point at lines that contain the quoted text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from edaqa_pipeline.model import EvidenceItem

STOPWORDS = frozenset(
    """a an the is are was were be been being of in on at to for from by with and or not no do does
    did how what which who whom whose why when where can could should would will shall may might
    must this that these those it its as into than then there their them they i we you your our
    me my about if else also any all some such one use used using set get""".split()
)
_TOKEN = re.compile(r"-?[A-Za-z_][A-Za-z0-9_.\-]*|\d+(?:\.\d+)?")
MAX_SEGMENTS = 3
MAX_CODE_LINES = 20


@dataclass(frozen=True)
class Segment:
    text: str
    item: EvidenceItem
    start: int | None
    end: int | None
    rank: int

    def citation(self) -> str:
        if self.item.page is not None or self.start is None:
            return self.item.citation()
        if self.start == self.end:
            return f"{self.item.doc}:L{self.start}"
        return f"{self.item.doc}:L{self.start}-L{self.end}"


def terms(text: str) -> dict[str, float]:
    """Question terms with weights: identifiers 3, other words 1, stopwords dropped."""
    weights: dict[str, float] = {}
    for token in _TOKEN.findall(text):
        low = token.lower().strip(".-") if not token.startswith("-") else token.lower().rstrip(".")
        if not low or low in STOPWORDS or len(low) < 2:
            continue
        ident = "_" in token or token.startswith("-") or bool(re.match(r"[A-Z]{2,5}-\d+", token)) or "." in token.strip(".")
        weights[low] = max(weights.get(low, 0.0), 3.0 if ident else 1.0)
    return weights


def _segments(item: EvidenceItem, rank: int) -> list[Segment]:
    lines = item.text.split("\n")
    base = item.start_line
    out: list[Segment] = []
    i = 0
    header: list[str] = []
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(stripped[:3]):
                j += 1
            end = min(j, len(lines) - 1)
            body = lines[i : end + 1][: MAX_CODE_LINES + 2]
            out.append(Segment("\n".join(body), item, _abs(base, i), _abs(base, min(end, i + len(body) - 1)), rank))
            i = end + 1
            header = []
            continue
        if stripped.startswith("|"):
            if not header:
                header = [line]
                if i + 1 < len(lines) and set(lines[i + 1].replace("|", "").strip()) <= set("-: "):
                    header.append(lines[i + 1])
                    i += 2
                    continue
            else:
                out.append(Segment("\n".join([*header, line]), item, _abs(base, i), _abs(base, i), rank))
            i += 1
            continue
        header = []
        if stripped and not stripped.startswith("#"):
            out.append(Segment(line, item, _abs(base, i), _abs(base, i), rank))
        i += 1
    return out


def _abs(base: int | None, offset: int) -> int | None:
    return None if base is None else base + offset


def score_segment(segment: Segment, weights: dict[str, float]) -> float:
    """Matched term weight, damped for long segments (a 40-line script that names the command
    should not beat the one table row that states its default), plus a rank prior."""
    low = segment.text.lower()
    score = sum(w for term, w in weights.items() if term in low)
    if not score:
        return 0.0
    length = max(1.0, len(segment.text.split("\n")[-1].split()) / 12) if "|" in segment.text[:2] else max(1.0, len(segment.text.split()) / 12)
    bonus = 0.0
    last = segment.text.split("\n")[-1]
    if last.lstrip().startswith("|"):
        key = last.strip().strip("|").split("|")[0].strip().strip("`").lower()
        if key and weights.get(key, 0.0) >= 3.0:
            bonus = 2.0  # the row keyed by an identifier the question names
    return score / length**0.5 + bonus + 0.5 / (1 + segment.rank)


def extractive_answer(question: str, evidence: list[EvidenceItem], max_segments: int = MAX_SEGMENTS) -> str:
    """An answer quoted from the evidence, one cited segment per paragraph."""
    weights = terms(question)
    scored: list[tuple[float, int, Segment]] = []
    order = 0
    for rank, item in enumerate(evidence[:5]):
        for segment in _segments(item, rank):
            scored.append((score_segment(segment, weights), order, segment))
            order += 1
    best = [s for s in sorted(scored, key=lambda t: (-t[0], t[1])) if s[0] > 0][:max_segments]
    if not best:
        return "No answer found in the indexed documents."
    best.sort(key=lambda t: t[1])
    return "\n\n".join(f"{seg.text.strip()}\n[{seg.citation()}]" for _, _, seg in best)
