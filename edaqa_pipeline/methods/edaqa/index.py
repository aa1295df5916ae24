"""What the EDAQA method adds to an index snapshot: identifier recall over chunks.

Every chunk's canonical identifiers (commands, ``-options``, ``command -option`` pairs,
ORFS variables, message ids, file names; ``text.identifiers``) are extracted once when the
method is built: prose lines with the prose rules, code lines (the parser's ``code`` kind)
with the code rules (the first word of a line is a command there). They are a view of the one
lexical index (``retrieval.lexical.LexicalIndex``, bm25s) whose terms are those identifiers,
with ``k1 = 0``: a chunk scores an identifier's idf when it carries it, however often, so a
long option table is not preferred over the row that names the option once. A query's
identifiers, matched exactly or fuzzily against the index's (``IdentifierVocabulary``), then
select the chunks that carry them, weighted by match quality x idf: ``-sink_clustering_size``
finds its option row even when the words around it say nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edaqa_pipeline.retrieval.lexical import LexicalIndex
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
    """The chunks' identifiers as a lexical index, and their vocabulary for fuzzy matching."""

    lexical: LexicalIndex
    vocabulary: IdentifierVocabulary

    @classmethod
    def build(cls, records: list[dict[str, Any]]) -> ChunkIdentifierIndex:
        """``records``: the snapshot's chunk records (row order)."""
        lexical = LexicalIndex(token_lists=[chunk_identifiers(r["text"], r["line_kinds"]) for r in records],
                               k1=0.0, b=0.0)
        return cls(lexical, IdentifierVocabulary(lexical.vocabulary))

    def scores(self, query_ids: list[str]) -> dict[int, float]:
        """Chunk row -> sum over the query's identifiers it carries of match weight x idf."""
        if not query_ids:
            return {}
        out: dict[int, float] = defaultdict(float)
        for ident, weight in self.vocabulary.match(query_ids).items():
            column = self.lexical.scores([ident])
            for row in np.flatnonzero(column):
                out[int(row)] += weight * float(column[row])
        return dict(out)
