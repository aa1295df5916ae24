"""Order-independent table hashes for manifests and equivalence tests.

``content_hash`` covers every column (run metadata is never stored in our tables), and does
not depend on row order, run time or storage path: each row is serialised canonically (one
JSON object written by Polars), the row digests are sorted, and the sorted list is hashed. A
fixed-width float column (``pl.Array``, the embeddings) enters its row as the SHA-256 of each
vector's float64 bytes, computed from the column's matrix: the vector tables are most of the
cells of an index. Column types are not hashed (a partition read with a Null-typed column
must hash as its typed twin).

``semantic_hash`` additionally drops positions (line spans, pages, bounding boxes), byte-level
facts about the source file, and parser details, and normalises whitespace in every string,
so that equivalent Markdown (extra blank lines, tilde fences, closing heading hashes, a BOM)
hashes the same. Our ids are content-derived (``model.stable_id``), so they stay in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

import numpy as np
import polars as pl

from edaqa_pipeline.model import WHITESPACE_RUN

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


def _canonical(expr: pl.Expr, dtype: pl.DataType, semantic: bool, column: str) -> pl.Expr:
    """``expr`` (of ``dtype``) in the form its cells are hashed in: floats as text with NaN
    spelled out (JSON would make it null), strings whitespace-normalised when ``semantic``
    (``model.normalise_ws``'s rule), bytes as hex, the same rules inside lists, arrays and
    structs (fields in name order, as columns are; a missing struct stays null rather than
    becoming one of null fields); other types as they are."""
    if dtype == pl.String:
        return expr.str.replace_all(WHITESPACE_RUN, " ").str.strip_chars() if semantic else expr
    if dtype in (pl.Float32, pl.Float64):
        return pl.when(expr.is_nan()).then(pl.lit("NaN")).otherwise(expr.cast(pl.String))
    if dtype == pl.Binary:
        return expr.bin.encode("hex")
    if dtype == pl.Object:
        raise TypeError(f"column {column!r}: an Object column has no canonical form to hash")
    if isinstance(dtype, pl.Array):
        return _canonical(expr.arr.to_list(), pl.List(dtype.inner), semantic, column)
    if isinstance(dtype, pl.List):
        return expr.list.eval(_canonical(pl.element(), dtype.inner, semantic, column))
    if isinstance(dtype, pl.Struct):
        fields = sorted(dtype.fields, key=lambda f: f.name)
        return pl.when(expr.is_not_null()).then(
            pl.struct([_canonical(expr.struct.field(f.name), f.dtype, semantic, column).alias(f.name)
                       for f in fields]))
    return expr


def _vector_cells(series: pl.Series) -> pl.Series | None:
    """The cells of a fixed-width float column (``pl.Array``: the embedding tables), each the
    SHA-256 of its float64 bytes (equal exactly when every component is), computed from the
    column's matrix at once; a missing vector stays null and one with a NaN component is
    spelled out component by component. None for any other column."""
    dtype = series.dtype
    if not isinstance(dtype, pl.Array) or dtype.inner not in (pl.Float32, pl.Float64):
        return None
    if not len(series):
        return pl.Series(series.name, [], dtype=pl.String)
    present = series.drop_nulls()
    matrix = np.ascontiguousarray(present.to_numpy(), dtype="<f8").reshape(len(present), -1)
    bad = np.isnan(matrix).any(axis=1)  # NaN or a null component (numpy reads both as NaN)

    def spell(i: int) -> str:
        values = present[i].to_list()
        return "nan:" + ",".join("null" if v is None else "NaN" if v != v else repr(v) for v in values)

    spelled = iter(spell(i) if bad[i] else "f8:" + hashlib.sha256(matrix[i].tobytes()).hexdigest()
                   for i in range(len(present)))
    cells = [None if missing else next(spelled) for missing in series.is_null().to_list()]
    return pl.Series(series.name, cells, dtype=pl.String)


SLICE_ROWS = 8192  # rows serialised at a time: a 16x corpus's elements table whole was +270 MiB


def _row_digests(df: pl.DataFrame, columns: list[str], semantic: bool) -> list[str]:
    """The SHA-256 of each row's canonical JSON object, a slice of rows at a time (the JSON
    text of a whole large table would be held at once otherwise)."""
    digests: list[str] = []
    for part in df.iter_slices(n_rows=SLICE_ROWS):
        cells = []
        for c in columns:
            vectors = _vector_cells(part[c])
            cells.append(pl.lit(vectors) if vectors is not None
                         else _canonical(pl.col(c), part.schema[c], semantic, c).alias(c))
        rows = part.select(pl.struct(cells).struct.json_encode().alias("row")).to_series().to_list()
        digests.extend(hashlib.sha256(row.encode("utf-8")).hexdigest() for row in rows)
    return digests


def _columns(names: Iterable[str], semantic: bool) -> list[str]:
    return sorted(c for c in names if not (semantic and c in POSITIONAL_COLUMNS))


def _digests(df: pl.DataFrame, semantic: bool) -> list[str]:
    """The row digests of ``df`` (none for a table without rows or hashed columns)."""
    columns = _columns(df.columns, semantic)
    return _row_digests(df, columns, semantic) if columns and df.height else []


def _combine(columns: list[str], digests: list[str]) -> str:
    """SHA-256 over the column names and the sorted row digests: order-independent."""
    h = hashlib.sha256(json.dumps(columns).encode("utf-8"))
    for digest in sorted(digests):
        h.update(digest.encode("ascii"))
    return h.hexdigest()


def _hash(df: pl.DataFrame, semantic: bool) -> str:
    """SHA-256 over the sorted SHA-256 digests of the rows, each row one canonical JSON
    object (sorted column names, ``_canonical`` cells) written by Polars: the rows are
    serialised in Rust, not one Python object at a time (a 16x corpus's manifest: 14 s before)."""
    return _combine(_columns(df.columns, semantic), _digests(df, semantic))


def summary_of_parts(parts: Iterable[pl.DataFrame]) -> dict[str, Any] | None:
    """``rows``, ``content_hash`` and ``semantic_hash`` of the rows of ``parts`` taken as one
    table (equal to the hashes of their concatenation), holding one part at a time: the
    manifest of a 16x corpus read its ``elements`` partitions whole (+216 MiB at the build's
    end). None when there is no part; every part must have the same columns."""
    rows, columns = 0, None
    content: list[str] = []
    semantic: list[str] = []
    for part in parts:
        if columns is None:
            columns = sorted(part.columns)
        elif sorted(part.columns) != columns:
            raise ValueError(f"parts of one table with different columns: {columns} and {sorted(part.columns)}")
        rows += part.height
        content += _digests(part, semantic=False)
        semantic += _digests(part, semantic=True)
    if columns is None:
        return None
    return {"rows": rows, "content_hash": _combine(_columns(columns, False), content),
            "semantic_hash": _combine(_columns(columns, True), semantic)}


def content_hash(df: pl.DataFrame) -> str:
    """Hash of every column and row, independent of row order."""
    return _hash(df, semantic=False)


def semantic_hash(df: pl.DataFrame) -> str:
    """Hash without positions and parser details, with whitespace normalised."""
    return _hash(df, semantic=True)
