"""Identifier-hard negatives: units a lexical matcher would confuse with the positive.

Why: the base-encoder neighbours of the sampler are *semantically* close, but the questions
the encoder fails on are the ones that name an identifier: "the default of ``-max_length`` in
``repair_timing``" must not land on ``repair_design -max_length`` nor on another option of
``repair_timing``. Two sources, both from the index itself:

* **graph** (the unit-identifier incidence, i.e. which unit names which command, option,
  variable, message id or file: ``graphs.summaries.unit_identifiers``): for a query naming an
  option of a command, (a) units that name the same command but not that option, then (b) units
  that name the same option but not that command; ordered by base-encoder closeness to the
  positive.
* **lexical**: the best BM25 units for the query (``retrieval.lexical.LexicalIndex`` over the
  unit summaries), best first.

A unit that names every identifier of the query (or, for a query without identifiers, any unit
among the lexical hits that shares the positive's anchor) may answer it, so it is never an
identifier-hard negative; the sampler's own exclusions (same anchor, shared occurrence) apply
too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edaqa_pipeline.retrieval.lexical import LexicalIndex
from edaqa_pipeline.text.identifiers import identifier_kind, query_identifiers

LEXICAL_DEPTH = 30
GRAPH_DEPTH = 30


def query_names(query: str, anchor: str = "") -> tuple[set[str], set[str], set[str]]:
    """(commands, options, other identifiers) the query names, canonical; a query that names
    no command is about its positive's command ``anchor`` when that is one."""
    commands: set[str] = set()
    options: set[str] = set()
    other: set[str] = set()
    for ident in query_identifiers(query):
        kind = identifier_kind(ident)
        if kind == "command":
            commands.add(ident)
        elif kind == "option":
            options.add(ident)
        elif kind == "qualified":
            cmd, _, opt = ident.partition(" ")
            commands.add(cmd)
            options.add(opt)
        elif kind in ("variable", "message", "file", "api"):
            other.add(ident)
    if not commands and anchor and identifier_kind(anchor) == "command":
        commands.add(anchor)
    return commands, options, other


class IdentifierNegatives:
    """Per-query pools of identifier-hard negative rows (unit row indexes)."""

    def __init__(self, summaries: Sequence[str], identifiers: Sequence[set[str]],
                 anchors: Sequence[str], vectors: np.ndarray) -> None:
        self.identifiers = [set(i) for i in identifiers]
        self.anchors = list(anchors)
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.lexical = LexicalIndex(list(summaries))
        self.by_identifier: dict[str, list[int]] = {}
        for row, idents in enumerate(self.identifiers):
            for ident in sorted(idents):
                self.by_identifier.setdefault(ident, []).append(row)

    def _rows_naming(self, ident: str) -> set[int]:
        return set(self.by_identifier.get(ident, ()))

    def pool(self, query: str, positive: int, excluded: set[int]) -> list[int]:
        """Graph negatives (closest to the positive first), then lexical ones (best first)."""
        commands, options, other = query_names(query, self.anchors[positive])
        named = commands | options | other
        blocked = set(excluded)
        if named:
            blocked |= {r for r, ids in enumerate(self.identifiers) if named <= ids}
        graph: set[int] = set()
        if options:
            for cmd in commands:  # same command, another option
                graph |= {r for r in self._rows_naming(cmd) if not options <= self.identifiers[r]}
            for opt in options:  # same option, another command
                graph |= {r for r in self._rows_naming(opt) if not commands & self.identifiers[r]}
        for ident in other:  # the same variable / message / file named elsewhere, without the rest
            graph |= self._rows_naming(ident)
        graph -= blocked
        sims = self.vectors[sorted(graph)] @ self.vectors[positive] if graph else np.zeros(0)
        ordered = [r for _, r in sorted(zip((-sims).tolist(), sorted(graph), strict=True))][:GRAPH_DEPTH]
        lexical = [r for r, _ in self.lexical.top(query, LEXICAL_DEPTH + len(blocked))
                   if r not in blocked and r not in graph][:LEXICAL_DEPTH]
        return ordered + lexical
