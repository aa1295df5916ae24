"""What the EDAQA method adds to an index snapshot: an identifier index over chunks.

Every chunk's canonical identifiers (commands, ``-options``, ``command -option`` pairs,
ORFS variables, message ids, file names; ``text.identifiers``) are extracted once when the
method is built: prose with the prose rules, fenced code with the code rules (the first word
of a line is a command there). A query's identifiers then select the chunks that carry them,
weighted by how rare each identifier is (an idf over chunks), so ``-sink_clustering_size``
finds its option row even when the words around it say nothing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.text.identifiers import IdentifierVocabulary, extract_identifiers


def chunk_identifiers(text: str, line_kinds: Sequence[str]) -> list[str]:
    """Canonical identifiers of a chunk's raw lines: code lines (the parser's ``code`` kind)
    by the code rules, the rest by the prose rules (first-seen order, no duplicates)."""
    prose: list[str] = []
    code: list[str] = []
    for line, kind in zip(text.split("\n"), line_kinds, strict=True):
        if kind in ("code_fence", "directive"):  # markup, not content
            continue
        (code if kind == "code" else prose).append(line)
    ids = extract_identifiers("\n".join(prose))
    if code:
        ids += extract_identifiers("\n".join(code), code=True)
    return list(dict.fromkeys(ids))


@dataclass
class ChunkIdentifierIndex:
    """Postings identifier -> chunk rows, and their idf."""

    postings: dict[str, list[int]]
    idf: dict[str, float]
    vocabulary: IdentifierVocabulary

    @classmethod
    def build(cls, records: list[dict[str, Any]]) -> ChunkIdentifierIndex:
        """``records``: the snapshot's chunk records (row order)."""
        postings: dict[str, list[int]] = defaultdict(list)
        for row, rec in enumerate(records):
            for ident in chunk_identifiers(rec["text"], rec["line_kinds"]):
                postings[ident].append(row)
        n = max(len(records), 1)
        idf = {ident: math.log(1 + n / len(rows)) for ident, rows in postings.items()}
        return cls(dict(postings), idf, IdentifierVocabulary(postings))

    def scores(self, query_ids: list[str]) -> dict[int, float]:
        """Chunk row -> sum over the query's identifiers it carries of match weight x idf."""
        if not query_ids:
            return {}
        out: dict[int, float] = defaultdict(float)
        for ident, weight in self.vocabulary.match(query_ids).items():
            for row in self.postings.get(ident, ()):
                out[row] += weight * self.idf[ident]
        return dict(out)
