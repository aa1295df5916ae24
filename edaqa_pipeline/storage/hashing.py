"""Order-independent table hashes for manifests and equivalence tests.

``content_hash`` covers every column (run metadata is never stored in our tables), and does
not depend on row order, run time or storage path: each row is serialised canonically, the
row digests are sorted, and the sorted list is hashed.

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
        if value and all(type(v) is float for v in value):  # a vector: one pass, same output
            return ["NaN" if v != v else repr(v) for v in value]
        return [_canonical(v, semantic) for v in value]
    if isinstance(value, dict):
        return {k: _canonical(v, semantic) for k, v in sorted(value.items())}
    return value


def _hash(df: pl.DataFrame, semantic: bool) -> str:
    columns = sorted(c for c in df.columns if not (semantic and c in POSITIONAL_COLUMNS))
    digests = []
    for row in df.select(columns).iter_rows(named=True):
        payload = json.dumps(_canonical(row, semantic), sort_keys=True, ensure_ascii=False)
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
