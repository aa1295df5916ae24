"""Order-independent table hashes for manifests and equivalence tests.

``content_hash`` covers every column (run metadata is never stored in our tables), and does
not depend on row order, run time or storage path: each row is serialised canonically, the
row digests are sorted, and the sorted list is hashed. A fixed-width float column (``pl.Array``,
the embeddings) enters its row as the SHA-256 of each vector's float64 bytes, computed from
the column's matrix: the vector tables are most of the cells of an index.

``semantic_hash`` additionally drops positions (line spans, pages, bounding boxes), byte-level
facts about the source file, and parser details, and normalises whitespace in every string,
so that equivalent Markdown (extra blank lines, tilde fences, closing heading hashes, a BOM)
hashes the same. Our ids are content-derived (``model.stable_id``), so they stay in.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np
import polars as pl

from edaqa_pipeline.model import normalise_ws

POSITIONAL_COLUMNS = frozenset(
    {
        "start_line",
        "end_line",
        "page",
        "pages",
        "bbox",
        "line_spans",
        "source_sha256",
        "n_bytes",
        "n_lines",
        "meta",
        "raw",
        "ordinal",
    }
)


def _canonical(value: Any, semantic: bool) -> Any:
    if isinstance(value, str):
        return normalise_ws(value) if semantic else value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return repr(value)
    if isinstance(value, list | tuple):
        if value and all(type(v) is float for v in value):  # one pass, the same strings
            return ["NaN" if v != v else repr(v) for v in value]
        return [_canonical(v, semantic) for v in value]
    if isinstance(value, dict):
        return {k: _canonical(v, semantic) for k, v in sorted(value.items())}
    return value


def _vector_cells(series: pl.Series) -> list[Any] | None:
    """The cells of a fixed-width float column (``pl.Array``: the embedding tables), each the
    SHA-256 of its float64 bytes (equal exactly when every component is), computed from the
    column's matrix at once rather than one Python float and one string per component; a
    missing vector or one with a NaN or null component is canonicalised like any list. None
    for any other column (those keep their row-wise form, so no other table's hash moved)."""
    dtype = series.dtype
    if not isinstance(dtype, pl.Array) or dtype.inner not in (pl.Float32, pl.Float64):
        return None
    if not len(series):
        return []
    if series.null_count():
        rows = series.to_list()
        return [None if r is None else _canonical(r, False) for r in rows]
    matrix = np.ascontiguousarray(series.to_numpy(), dtype="<f8").reshape(len(series), -1)
    bad = np.isnan(matrix).any(axis=1)
    return [_canonical(series[i].to_list(), False) if bad[i]
            else "f8:" + hashlib.sha256(matrix[i].tobytes()).hexdigest() for i in range(len(series))]


def _hash(df: pl.DataFrame, semantic: bool) -> str:
    columns = sorted(c for c in df.columns if not (semantic and c in POSITIONAL_COLUMNS))
    vectors = {c: cells for c in columns if (cells := _vector_cells(df[c])) is not None}
    rest = [c for c in columns if c not in vectors]
    rows = df.select(rest).iter_rows(named=True) if rest else ({} for _ in range(df.height))
    digests = []
    for i, row in enumerate(rows):
        cells = _canonical(row, semantic)
        cells.update({c: v[i] for c, v in vectors.items()})
        payload = json.dumps(cells, sort_keys=True, ensure_ascii=False)
        digests.append(hashlib.sha256(payload.encode("utf-8")).hexdigest())
    h = hashlib.sha256(json.dumps(columns).encode("utf-8"))
    for digest in sorted(digests):
        h.update(digest.encode("ascii"))
    return h.hexdigest()


def content_hash(df: pl.DataFrame) -> str:
    """Hash of every column and row, independent of row order."""
    return _hash(df, semantic=False)


def semantic_hash(df: pl.DataFrame) -> str:
    """Hash without positions and parser details, with whitespace normalised."""
    return _hash(df, semantic=True)
