"""The one incremental embedder: reuse known vectors, encode the rest in one call.

Every vector table (chunks, unit summaries, element summaries, ChipKG nodes, tuned vectors)
keys its rows by ``(kind, item id, text hash, encoder id)``: a vector is reused exactly when
the same item has the same text under the same model, and a changed text, a changed model or
a new adapter re-encodes it. ``embed`` encodes every missing text of a call in one encoder
call, so a build of many documents keeps every core busy once, not once per document.

Bytes do not depend on the call: every text is encoded alone (``Encoder.encode(...,
stable=True)``), so a vector is the same whether its text was encoded with its own document
or with the whole corpus, and an incremental build equals a full one byte for byte.

For the same reason a vector is a function of (kind, text, encoder) alone: an item whose key
is new but whose text some known item has (the same paragraph in the next release of a
manual, a unit whose summary did not change) takes that vector instead of encoding it again
(``shared``), and the bytes are those a fresh encoding would give.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from edaqa_pipeline.retrieval.encoders import Encoder

VECTOR_KEY_COLUMNS = ("kind", "item_id", "text_hash", "encoder_id")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def vector_dtype(dim: int) -> pl.DataType:
    return pl.Array(pl.Float32(), dim)


def vector_series(name: str, vectors: np.ndarray, dim: int) -> pl.Series:
    """A Polars column of fixed-width float32 vectors (empty-safe)."""
    if not len(vectors):
        return pl.Series(name, [], dtype=vector_dtype(dim))
    return pl.Series(name, np.asarray(vectors, dtype=np.float32), dtype=vector_dtype(dim))


def vectors_of(frame: pl.DataFrame, column: str = "vector") -> np.ndarray:
    """The vectors of a table as a float32 matrix (shape (0, 0) when empty)."""
    if frame.is_empty():
        return np.zeros((0, 0), dtype=np.float32)
    return frame[column].to_numpy().astype(np.float32, copy=False)


@dataclass
class Embedder:
    """Vectors of (kind, id, text) items under one encoder, reusing ``known`` ones."""

    encoder: Encoder
    known: dict[tuple[str, str, str, str], np.ndarray] = field(default_factory=dict)
    encoded: int = 0
    reused: int = 0
    shared: int = 0  # new keys whose text a known item has: reused by text, not encoded
    by_text: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)
    shared_texts: dict[tuple[str, str, str, str], str] = field(default_factory=dict)

    @classmethod
    def from_frames(cls, encoder: Encoder, *frames: pl.DataFrame | None, kind: str = "",
                    id_column: str = "item_id") -> Embedder:
        """Known vectors from earlier outputs: ``text_hash``, ``encoder_id``, ``vector`` and
        the item id in ``id_column``; ``kind`` from the ``kind`` column, else ``kind``."""
        known: dict[tuple[str, str, str, str], np.ndarray] = {}
        for frame in frames:
            if frame is None or frame.is_empty() or not {id_column, "text_hash", "encoder_id"} <= set(frame.columns):
                continue
            vectors = vectors_of(frame)
            kinds = frame["kind"].to_list() if "kind" in frame.columns else [kind] * frame.height
            for i, (item, thash, enc) in enumerate(frame.select(id_column, "text_hash", "encoder_id").iter_rows()):
                known[(kinds[i], item, thash, enc)] = vectors[i]
        return cls(encoder=encoder, known=known,
                   by_text={(k, thash, enc): v for (k, _, thash, enc), v in known.items()})

    def key(self, kind: str, item_id: str, text: str) -> tuple[str, str, str, str]:
        return (kind, item_id, text_hash(text), self.encoder.encoder_id)

    def embed(self, kind: str, ids: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        """One vector per item, row-aligned with ``ids``; missing ones encoded in one batch."""
        keys = [self.key(kind, i, t) for i, t in zip(ids, texts, strict=True)]
        missing = list(dict.fromkeys(k for k in keys if k not in self.known))
        text_of = dict(zip(keys, texts, strict=True))
        for k in missing:
            if (k[0], k[2], k[3]) in self.by_text:
                self.known[k] = self.by_text[(k[0], k[2], k[3])]
                self.shared_texts[k] = text_of[k]
                self.shared += 1
        missing = [k for k in missing if k not in self.known]
        if missing:
            text_of = {self.key(kind, i, t): t for i, t in zip(ids, texts, strict=True)}
            fresh = self.encoder.encode([text_of[k] for k in missing], stable=True)
            self.known.update(zip(missing, fresh, strict=True))
            self.by_text.update({(k[0], k[2], k[3]): v for k, v in zip(missing, fresh, strict=True)})
        self.encoded += len(missing)
        self.reused += len(keys) - len(missing)
        if not keys:
            return np.zeros((0, self.encoder.dim), dtype=np.float32)
        return np.stack([self.known[k] for k in keys]).astype(np.float32, copy=False)

    def recheck_shared(self, sample: int = 8) -> list[str]:
        """Items whose vector, taken from an identical text of another item, is not the bytes
        a fresh encoding gives (a sample of ``sample``, the same each run): what makes taking
        vectors by text safe is checked, not assumed."""
        keys = sorted(self.shared_texts)[:sample]
        if not keys:
            return []
        fresh = self.encoder.encode([self.shared_texts[k] for k in keys], stable=True)
        return [f"{k[1]}: the vector taken from an identical text differs from its fresh encoding"
                for k, vector in zip(keys, fresh, strict=True)
                if not np.array_equal(np.asarray(vector, np.float32), np.asarray(self.known[k], np.float32))]

    def frame(self, kind: str, ids: Sequence[str], texts: Sequence[str],
              extra: Mapping[str, Sequence[object]] | None = None) -> pl.DataFrame:
        """The table of these items: ``VECTOR_KEY_COLUMNS``, the ``extra`` columns, ``vector``."""
        vectors = self.embed(kind, ids, texts)
        data: dict[str, object] = {
            "kind": [kind] * len(ids), "item_id": list(ids),
            "text_hash": [text_hash(t) for t in texts],
            "encoder_id": [self.encoder.encoder_id] * len(ids),
        }
        schema: dict[str, pl.DataType] = {c: pl.String() for c in VECTOR_KEY_COLUMNS}
        for name, values in (extra or {}).items():
            data[name] = list(values)
        frame = pl.DataFrame(data, schema_overrides=schema) if ids else pl.DataFrame(schema={
            **schema, **{name: pl.String() for name in (extra or {})}})
        return frame.with_columns(vector_series("vector", vectors, self.encoder.dim))
