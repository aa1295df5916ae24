"""A read-only view of an indexed storage root, loaded once for querying.

Reads what ``edaqa index`` wrote: ``manifest.json`` (which documents are indexed), the chunk
tables and their vectors (Parquet), the unit hyperedges, their chunk edges and vectors, and
opens the LanceDB ``chunks`` table for full-text search. Dense similarity is exact
(a matrix product over L2-normalised vectors, the same ranking as LanceDB's flat cosine
search) and stays in memory because the reranker needs each candidate's vector in both
encoder spaces; for corpora past ~1M chunks, switch dense search to a LanceDB ANN index.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval import lance_store
from edaqa_pipeline.retrieval.encoders import Encoder, configured_encoder, function_encoder
from edaqa_pipeline.retrieval.lexical import LexicalIndex
from edaqa_pipeline.retrieval.line_structure import LineStructure
from edaqa_pipeline.retrieval.topk import top_k
from edaqa_pipeline.storage.tables import read_partitions, read_table


class NotIndexedError(RuntimeError):
    """The storage root has no index (run ``edaqa index`` first)."""


class EncoderMismatchError(RuntimeError):
    """The configured encoder is not the one the index was built with."""


class NoTrainedEncoderError(RuntimeError):
    """The storage root has no trained function-aware encoder (``fa_hybrid_tuned`` needs one)."""


TRAINED_ENCODER_TABLE = "trained_encoder"
_DERIVED_LOCK = threading.RLock()
TUNED_EMBEDDINGS_TABLE = "tuned_embeddings"


@dataclass
class TunedSpace:
    """The trained function-aware encoder of a storage root and the corpus in its space."""

    version: str
    adapter_dir: str
    unit_vectors: np.ndarray  # row-aligned with the snapshot's units
    chunk_vectors: np.ndarray  # row-aligned with the snapshot's chunks
    encoded_now: int = 0  # rows missing from ``tuned_embeddings`` that were encoded on load


def load_tuned_space(snapshot: IndexSnapshot) -> TunedSpace:
    """Read ``trained_encoder`` (which adapter) and ``tuned_embeddings`` (its vectors); rows
    the table lacks (new chunks or units since it was written) are encoded now."""
    tables = snapshot.storage / "tables"
    card = read_table(tables, TRAINED_ENCODER_TABLE)
    hint = (f"no trained function-aware encoder in {snapshot.storage}: run `edaqa train --storage "
            f"{snapshot.storage}` (or materialise the training assets) first")
    if card is None or card.is_empty():
        raise NoTrainedEncoderError(hint)
    row = card.row(0, named=True)
    adapter_dir = snapshot.storage / row["adapter_path"]
    if not (adapter_dir / "adapter_config.json").is_file():
        raise NoTrainedEncoderError(f"adapter folder {adapter_dir} is missing; " + hint)
    version = row["version"]
    encoder = function_encoder(snapshot.base.path, adapter=str(adapter_dir))
    encoder.warm()  # load it now (its ONNX twin when exported): the first query should not pay
    tuned = read_table(tables, TUNED_EMBEDDINGS_TABLE)
    known: dict[tuple[str, str], Any] = {}
    if tuned is not None:
        current = tuned.filter(pl.col("encoder_version") == version)
        known = {(k, i): v for k, i, v in current.select("kind", "item_id", "vector").iter_rows()}
    encoded = 0

    def vectors(kind: str, ids: list[str], texts: list[str]) -> np.ndarray:
        nonlocal encoded
        out = np.zeros((len(ids), snapshot.dim), dtype=np.float32)
        missing = [i for i, item in enumerate(ids) if (kind, item) not in known]
        for i, item in enumerate(ids):
            if (kind, item) in known:
                out[i] = np.asarray(known[(kind, item)], dtype=np.float32)
        if missing:
            out[missing] = encoder.encode([texts[i] for i in missing])
            encoded += len(missing)
        return out

    units = snapshot.units
    unit_vectors = vectors("unit", units["unit_id"].to_list(),
                           units["summary"].to_list() if "summary" in units.columns else [""] * units.height)
    chunk_vectors = vectors("chunk", snapshot.chunks["chunk_id"].to_list(), snapshot.chunks["embed_text"].to_list())
    return TunedSpace(version=version, adapter_dir=str(adapter_dir), unit_vectors=unit_vectors,
                      chunk_vectors=chunk_vectors, encoded_now=encoded)


def scope_rows(storage: Path, documents: list[str]) -> list[dict[str, Any]]:
    """The element graph's rows as ``LineStructure.with_subjects`` reads them (document, type,
    lines, ``scope_command``); [] when the storage holds no element graph."""
    elements = read_partitions(Path(storage) / "tables", "elements", documents)
    if elements is None or "scope_command" not in elements.columns:
        return []
    return elements.select("document", "element_type", "start_line", "end_line", "scope_command").to_dicts()


def indexed_documents(storage: Path) -> list[str]:
    """Documents in the index: those of the last ``chunk_index`` materialisation (whether it
    ran from ``edaqa index``, the UI or the sensor), else ``manifest.json``."""
    index = read_table(storage / "tables", "chunk_index")
    if index is not None:
        return sorted(index["document"].to_list())
    manifest_path = storage / "manifest.json"
    if manifest_path.is_file():
        return list(json.loads(manifest_path.read_text())["documents"])
    raise NotIndexedError(f"{storage} holds no index: run `edaqa index --corpus DIR --storage {storage}` first")


@dataclass
class IndexSnapshot:
    """Chunks, units and their vectors as the index holds them, plus the encoder that made
    them (``base``, from ``EDAQA_ENCODER``; a different model than the index's is refused)."""

    storage: Path
    documents: list[str]
    chunks: pl.DataFrame
    chunk_vectors: np.ndarray
    units: pl.DataFrame
    unit_vectors: np.ndarray
    unit_chunk_rows: list[list[int]]  # unit row -> chunk row indexes (chunks(e), in order)
    lancedb_uri: str
    base: Encoder
    adapter: str = ""
    _chunk_row: dict[str, int] = field(default_factory=dict)
    tuned: TunedSpace | None = None  # loaded on first use of tuned_view()
    # indexes built from this snapshot by the methods (``derived``), shared by its views
    _derived: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def load(cls, storage: Path, lancedb_uri: str | None = None, adapter: str = "",
             encoder: Encoder | None = None) -> IndexSnapshot:
        """The index under ``storage``; ``encoder`` defaults to the configured one
        (``EDAQA_ENCODER``), ``lancedb_uri`` to ``EDAQA_LANCEDB_URI`` or ``STORAGE/lancedb``."""
        storage = Path(storage).resolve()
        tables = storage / "tables"
        documents = indexed_documents(storage)
        chunks = read_partitions(tables, "chunks", documents)
        vectors = read_partitions(tables, "chunk_embeddings", documents)
        if chunks is None or vectors is None:
            raise NotIndexedError(f"{storage} holds no chunks")
        if "line_kinds" not in chunks.columns:
            raise NotIndexedError(f"{storage} was indexed by an earlier version whose chunks lack "
                                  f"their line kinds: run `edaqa index --storage {storage}` again")
        encoder = encoder or configured_encoder()
        built_with = sorted(set(vectors["encoder_id"].to_list())) if "encoder_id" in vectors.columns else []
        if built_with and built_with != [encoder.encoder_id]:
            raise EncoderMismatchError(
                f"{storage} was indexed with encoder {', '.join(built_with)}, but the configured "
                f"encoder is {encoder.encoder_id} (EDAQA_ENCODER={encoder.path or 'packaged MiniLM'}): "
                "set EDAQA_ENCODER to the model the index was built with, or re-index")
        vec_by_id = dict(zip(vectors["chunk_id"].to_list(), vectors["vector"].to_list(), strict=True))
        dim = encoder.dim
        chunk_vectors = np.asarray([vec_by_id[c] for c in chunks["chunk_id"]], dtype=np.float32).reshape(-1, dim)
        units = read_table(tables, "unit_hyperedges")
        unit_vecs = read_table(tables, "unit_embeddings")
        if units is None or unit_vecs is None:
            units = pl.DataFrame(schema={"unit_id": pl.String(), "chunk_ids": pl.List(pl.String())})
            unit_vectors = np.zeros((0, dim), np.float32)
        else:
            uv = dict(zip(unit_vecs["unit_id"].to_list(), unit_vecs["vector"].to_list(), strict=True))
            unit_vectors = np.asarray([uv[u] for u in units["unit_id"]], dtype=np.float32).reshape(-1, dim)
        row_of = {c: i for i, c in enumerate(chunks["chunk_id"].to_list())}
        unit_chunk_rows = [[row_of[c] for c in ids if c in row_of] for ids in units["chunk_ids"].to_list()]
        uri = lancedb_uri or os.environ.get("EDAQA_LANCEDB_URI", "").strip() or str(storage / "lancedb")
        return cls(storage=storage, documents=documents, chunks=chunks, chunk_vectors=chunk_vectors,
                   units=units, unit_vectors=unit_vectors, unit_chunk_rows=unit_chunk_rows,
                   lancedb_uri=uri, base=encoder, adapter=adapter, _chunk_row=row_of)

    def restricted(self, documents: list[str]) -> IndexSnapshot:
        """This snapshot with only ``documents`` (one release of a storage root that holds
        several): their chunks and vectors, the units with a chunk among them (limited to
        those chunks), and indexes of its own (BM25 statistics, element index), so a method
        built on it ranks, fuses and packs within those documents alone."""
        keep = set(documents) & set(self.documents)
        in_docs = self.chunks["document"].is_in(sorted(keep))
        rows = np.flatnonzero(in_docs.to_numpy())
        new_row = {int(r): i for i, r in enumerate(rows)}
        unit_rows = [[new_row[r] for r in members if r in new_row] for members in self.unit_chunk_rows]
        units_kept = [u for u, members in enumerate(unit_rows) if members]
        chunks = self.chunks.filter(in_docs)
        units = self.units.with_row_index("_row").filter(pl.col("_row").is_in(units_kept)).drop("_row")
        return IndexSnapshot(
            storage=self.storage, documents=sorted(keep), chunks=chunks,
            chunk_vectors=self.chunk_vectors[rows], units=units, unit_vectors=self.unit_vectors[units_kept],
            unit_chunk_rows=[unit_rows[u] for u in units_kept], lancedb_uri=self.lancedb_uri,
            base=self.base, adapter=self.adapter,
            _chunk_row={c: i for i, c in enumerate(chunks["chunk_id"].to_list())})

    def derived(self, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        """``build()``, once per snapshot and ``key``: an index a method derives from this
        snapshot alone (the element index), built once however many retrievers of one
        evaluation or server ask for it. The snapshot is a fixed view of the storage, so
        nothing goes stale; a new build is read by a new snapshot."""
        with _DERIVED_LOCK:
            if key not in self._derived:
                self._derived[key] = build()
            return self._derived[key]

    @property
    def dim(self) -> int:
        return int(self.chunk_vectors.shape[1]) if self.chunk_vectors.ndim == 2 else self.base.dim

    @cached_property
    def chunk_records(self) -> list[dict[str, Any]]:
        return self.chunks.select("chunk_id", "document", "text", "start_line", "end_line", "page",
                                  "line_kinds", "section_path").to_dicts()

    @cached_property
    def line_structure(self) -> LineStructure:
        """The parser's kind of every indexed Markdown line, from the chunk rows, and the
        command its section documents, from the element graph's rows when they are stored."""
        lines = LineStructure.from_chunks(self.chunk_records if self.chunks.height else [])
        return lines.with_subjects(scope_rows(self.storage, self.documents))

    @cached_property
    def chunk_subjects(self) -> list[tuple[str, ...]]:
        """Each chunk row's ``EvidenceItem.line_subjects``, looked up once."""
        lines = self.line_structure
        return [lines.subjects(r["document"], range(r["start_line"], r["end_line"] + 1))
                if r["start_line"] is not None and r["end_line"] is not None else ()
                for r in self.chunk_records]

    @cached_property
    def function(self) -> Encoder:
        return function_encoder(self.base.path, adapter=self.adapter)

    @cached_property
    def function_chunk_vectors(self) -> np.ndarray:
        """Chunk vectors in the function-aware space (the base vectors until an adapter exists)."""
        if self.function.is_base:
            return self.chunk_vectors
        return self.function.encode(self.chunks["embed_text"].to_list())

    @cached_property
    def lexical(self) -> LexicalIndex:
        """BM25 over the chunks' ``embed_text`` (section path + text), shared by every method."""
        return LexicalIndex(self.chunks["embed_text"].to_list())

    @cached_property
    def lance_chunks(self):  # type: ignore[no-untyped-def]
        return lance_store.connect(self.lancedb_uri).open_table(lance_store.CHUNK_TABLE)

    def chunk_row(self, chunk_id: str) -> int:
        return self._chunk_row[chunk_id]

    def chunk_item(self, row: int, score: float, path: str) -> EvidenceItem:
        """Chunk ``row`` as an evidence item."""
        rec = self.chunk_records[row]
        return EvidenceItem(chunk_id=rec["chunk_id"], doc=rec["document"], text=rec["text"],
                            score=float(score), path=path, start_line=rec["start_line"],
                            end_line=rec["end_line"], page=rec["page"],
                            line_kinds=tuple(rec["line_kinds"]),
                            section=tuple(rec.get("section_path") or ()),
                            line_subjects=self.chunk_subjects[row])

    def dense_chunks(self, query: str, k: int, encoder: Encoder | None = None) -> list[tuple[int, float]]:
        """(chunk row, cosine) of the ``k`` nearest chunks to ``query`` in the base space."""
        q = (encoder or self.base).encode([query])[0]
        scores = self.chunk_vectors @ q
        return [(r, float(scores[r])) for r in top_k(scores, k)]

    def lexical_chunks(self, query: str, k: int) -> list[tuple[int, float]]:
        """(chunk row, BM25) of the ``k`` best chunks with a positive score."""
        return self.lexical.top(query, k)

    def tuned_view(self) -> IndexSnapshot:
        """This snapshot with the trained adapter as the function-aware encoder: unit vectors
        and function-space chunk vectors from ``tuned_embeddings`` (``fa_hybrid_tuned``).
        Raises ``NoTrainedEncoderError`` when the storage root has no trained encoder."""
        if self.tuned is None:
            self.tuned = load_tuned_space(self)
        view = replace(self, unit_vectors=self.tuned.unit_vectors, adapter=self.tuned.adapter_dir)
        view.__dict__["function_chunk_vectors"] = self.tuned.chunk_vectors
        for name in ("chunk_records", "lexical", "line_structure"):
            if name in self.__dict__:
                view.__dict__[name] = self.__dict__[name]
        return view
