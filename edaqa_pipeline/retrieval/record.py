"""What a retrieval returns: one ``Retrieval`` record, and the ``Retriever`` protocol.

A method's ``retrieve(query, k)`` returns everything the caller may want about that call:
the ranked evidence, the evidence of each step for multi-step methods (ChipMind's
iterations, used by ``system_recall@k``), a JSON-able trace of what the method did, and step
timings. Nothing is read back from a retriever object after a call, so one retriever can
serve concurrent queries (``edaqa serve``).

A ``Retrieval`` is also a read-only sequence of its ranked items (``len``, iteration,
indexing, slicing), so code that only needs the evidence can use it as a list.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, overload, runtime_checkable

from edaqa_pipeline.model import EvidenceItem


@dataclass(frozen=True)
class Draft:
    """An answer a method wrote itself while retrieving (ChipMind's Synthesize-Answer with a
    model): its text and the ``evidence_id`` of the items it cites. It is shown only through
    the same claim verification as any answer (``generation.answer``)."""

    text: str
    cited: tuple[str, ...]


@dataclass(frozen=True)
class Retrieval(Sequence[EvidenceItem]):
    method: str
    query: str
    items: tuple[EvidenceItem, ...]
    steps: tuple[tuple[EvidenceItem, ...], ...] = ()  # multi-step methods, in step order
    trace: Mapping[str, Any] = field(default_factory=dict)
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    draft: Draft | None = None

    @overload
    def __getitem__(self, index: int) -> EvidenceItem: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[EvidenceItem, ...]: ...
    def __getitem__(self, index: int | slice) -> EvidenceItem | tuple[EvidenceItem, ...]:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[EvidenceItem]:
        return iter(self.items)

    def all_steps(self) -> tuple[tuple[EvidenceItem, ...], ...]:
        """The evidence of every step; a one-step method has one step, its items."""
        return self.steps or (self.items,)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "query": self.query,
            "evidence": [e.to_json() for e in self.items],
            "trace": dict(self.trace),
            "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
        }


def retrieval(method: str, query: str, items: Sequence[EvidenceItem], **extra: Any) -> Retrieval:
    """A ``Retrieval`` from a list of items (the common one-step case)."""
    return Retrieval(method=method, query=query, items=tuple(items), **extra)


@runtime_checkable
class Retriever(Protocol):
    """What every method implements; built by ``registry.make_retriever``."""

    name: str

    def retrieve(self, query: str, k: int) -> Retrieval: ...
