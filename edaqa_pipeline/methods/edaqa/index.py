"""What the EDAQA method adds to an index snapshot: an identifier index over chunks.

Every chunk's canonical identifiers (commands, ``-options``, ``command -option`` pairs,
ORFS variables, message ids, file names; ``text.identifiers``) are extracted once when the
method is built: prose with the prose rules, fenced code with the code rules (the first word
of a line is a command there). A query's identifiers then select the chunks that carry them,
weighted by how rare each identifier is (an idf over chunks), so ``-sink_clustering_size``
finds its option row even when the words around it say nothing.

Chunk neighbours (the previous and next chunk of the same section) are recorded too: a
procedure split over two chunks is recalled whole.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from edaqa_pipeline.text.identifiers import IdentifierVocabulary, extract_identifiers

_FENCE = re.compile(r"^(```|~~~)")


def chunk_identifiers(text: str) -> list[str]:
    """Canonical identifiers of a chunk's raw lines: fenced code by the code rules, the rest
    by the prose rules (first-seen order, no duplicates)."""
    prose: list[str] = []
    code: list[str] = []
    inside = False
    for line in text.split("\n"):
        if _FENCE.match(line.strip()):
            inside = not inside
            continue
        (code if inside else prose).append(line)
    ids = extract_identifiers("\n".join(prose))
    if code:
        ids += extract_identifiers("\n".join(code), code=True)
    return list(dict.fromkeys(ids))


@dataclass
class ChunkIdentifierIndex:
    """Postings identifier -> chunk rows, their idf, and each chunk's section neighbours."""

    postings: dict[str, list[int]]
    idf: dict[str, float]
    vocabulary: IdentifierVocabulary
    neighbours: list[tuple[int, ...]] = field(default_factory=list)

    @classmethod
    def build(cls, records: list[dict[str, Any]], sections: list[tuple[str, tuple[str, ...]]]) -> ChunkIdentifierIndex:
        """``records``: the snapshot's chunk records (row order); ``sections``: (document,
        section path) per row, in reading order within each document."""
        postings: dict[str, list[int]] = defaultdict(list)
        for row, rec in enumerate(records):
            for ident in chunk_identifiers(rec["text"]):
                postings[ident].append(row)
        n = max(len(records), 1)
        idf = {ident: math.log(1 + n / len(rows)) for ident, rows in postings.items()}
        neighbours: list[tuple[int, ...]] = []
        for row, key in enumerate(sections):
            near = [r for r in (row - 1, row + 1) if 0 <= r < len(sections) and sections[r] == key]
            neighbours.append(tuple(near))
        return cls(dict(postings), idf, IdentifierVocabulary(postings), neighbours)

    def scores(self, query_ids: list[str]) -> dict[int, float]:
        """Chunk row -> sum over the query's identifiers it carries of match weight x idf."""
        if not query_ids:
            return {}
        out: dict[int, float] = defaultdict(float)
        for ident, weight in self.vocabulary.match(query_ids).items():
            for row in self.postings.get(ident, ()):
                out[row] += weight * self.idf[ident]
        return dict(out)
