"""Order-independent table hashes for manifests and equivalence tests.

``content_hash`` covers every column (run metadata is never stored in our tables), and does
not depend on row order, run time or storage path: each row is serialised canonically, the
row digests are sorted, and the sorted list is hashed. A list of floats (an embedding) enters
its row as the SHA-256 of its float64 bytes: the vector tables are most of the cells of an
index, and whole vector columns are hashed from their arrays.

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
        if value and all(type(v) is float and v == v for v in value):
            # a vector (no NaN): the digest of its float64 bytes, equal exactly when every
            # component is (as repr() would be), without a string per component
            return _vector_digest(np.asarray(value, dtype="<f8"))
        return [_canonical(v, semantic) for v in value]
    if isinstance(value, dict):
        return {k: _canonical(v, semantic) for k, v in sorted(value.items())}
    return value


def _vector_digest(values: np.ndarray) -> str:
    return "f8:" + hashlib.sha256(np.ascontiguousarray(values, dtype="<f8").tobytes()).hexdigest()


def _vector_cells(series: pl.Series) -> list[Any] | None:
    """The canonical cells of a list-of-floats column, computed from its array at once (what
    :func:`_canonical` gives each row, without a Python float per component); None for any
    other column."""
    dtype = series.dtype
    if not isinstance(dtype, pl.List) or dtype.inner not in (pl.Float32, pl.Float64):
        return None
    cells: list[Any] = []
    for values in series.to_list() if series.null_count() else series.to_numpy():
        if values is None:
            cells.append(None)
            continue
        array = np.asarray(values, dtype="<f8")
        cells.append(_vector_digest(array) if array.size and not np.isnan(array).any()
                     else [_canonical(float(v), False) for v in array])
    return cells


def _hash(df: pl.DataFrame, semantic: bool) -> str:
    columns = sorted(c for c in df.columns if not (semantic and c in POSITIONAL_COLUMNS))
    vectors = {c: cells for c in columns if (cells := _vector_cells(df[c])) is not None}
    rest = [c for c in columns if c not in vectors]
    digests = []
    for i, row in enumerate(df.select(rest).iter_rows(named=True)):
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
