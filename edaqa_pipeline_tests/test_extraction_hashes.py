"""Extraction layer: the order-independent content and semantic table hashes.
Pure functions only."""

from __future__ import annotations

import polars as pl
import pytest

from edaqa_pipeline.extraction.artifacts import extract_artifacts
from edaqa_pipeline.model import ARTIFACTS_SCHEMA, CHUNKS_SCHEMA, frame, normalise_ws
from edaqa_pipeline.storage.hashing import content_hash, semantic_hash
from edaqa_pipeline_tests._helpers_extraction import GRID, blocks_of

# --- table hashes ------------------------------------------------------------------------


def test_content_hash_is_independent_of_row_and_column_order() -> None:
    df = frame(extract_artifacts(blocks_of(GRID)), ARTIFACTS_SCHEMA)
    assert content_hash(df) == content_hash(df.reverse())
    assert content_hash(df) == content_hash(df.sample(fraction=1.0, shuffle=True, seed=7))
    assert content_hash(df) == content_hash(df.select(sorted(df.columns, reverse=True)))
    assert semantic_hash(df) == semantic_hash(df.reverse())


def test_content_hash_sees_every_value() -> None:
    df = frame(extract_artifacts(blocks_of(GRID)), ARTIFACTS_SCHEMA)
    changed = df.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("x")).otherwise(pl.col("rule")).alias("rule"))
    assert content_hash(df) != content_hash(changed)
    assert semantic_hash(df) != semantic_hash(changed)
    assert content_hash(df) != content_hash(df.head(df.height - 1))


def test_content_hash_sees_every_vector_component() -> None:
    """Embedding columns (fixed-width arrays) are hashed from their matrix: one component
    moved by one float32 step changes the hash, row order does not, a table of vectors alone
    still hashes its rows, and NaN or missing vectors hash."""
    import numpy as np

    from edaqa_pipeline.retrieval.embedder import vector_series

    vectors = np.random.default_rng(0).normal(size=(5, 384)).astype(np.float32)
    df = pl.DataFrame({"item_id": list("abcde")}).with_columns(vector_series("vector", vectors, 384))
    nudged = vectors.copy()
    nudged[3, 200] = np.nextafter(nudged[3, 200], np.float32(10))
    other = df.with_columns(vector_series("vector", nudged, 384))
    assert content_hash(df) == content_hash(df.reverse())
    assert content_hash(df) != content_hash(other) and semantic_hash(df) != semantic_hash(other)
    alone, alone_other = df.select("vector"), other.select("vector")
    assert content_hash(alone) != content_hash(alone_other) != content_hash(alone.head(0))
    gaps = pl.DataFrame({"item_id": ["a", "b", "c"], "vector": [[0.5, float("nan")], None, [0.5, 1.0]]},
                        schema={"item_id": pl.String(), "vector": pl.Array(pl.Float32(), 2)})
    assert content_hash(gaps) == content_hash(gaps.reverse())
    assert content_hash(gaps) != content_hash(gaps.head(2))


def test_hash_tells_nan_from_null_and_normalises_nested_strings() -> None:
    """Rows are serialised as JSON by Polars, which writes NaN as null: floats are spelled out
    first, in lists too. The semantic hash normalises whitespace in strings at any depth (an
    element's ``out_edges`` are a list of structs)."""
    schema = {"x": pl.Float64(), "xs": pl.List(pl.Float64()), "tags": pl.List(pl.String()),
              "edges": pl.List(pl.Struct({"dst": pl.String(), "relation": pl.String()}))}
    base = {"x": 1.5, "xs": [1.0, 2.0], "tags": ["a b"], "edges": [{"dst": "e 1", "relation": "next"}]}

    def table(**changes: object) -> pl.DataFrame:
        return pl.DataFrame([{**base, **changes}], schema=schema)

    assert content_hash(table(x=float("nan"))) != content_hash(table(x=None))
    assert content_hash(table(xs=[1.0, float("nan")])) != content_hash(table(xs=[1.0, None]))
    assert content_hash(table(x=1.5)) != content_hash(table(x=1.25))
    spaced = table(tags=["a \n  b"], edges=[{"dst": " e\t1 ", "relation": "next"}])
    assert content_hash(spaced) != content_hash(table())
    assert semantic_hash(spaced) == semantic_hash(table())
    assert semantic_hash(table(edges=[{"dst": "e 2", "relation": "next"}])) != semantic_hash(table())


def test_hash_keeps_apart_what_json_would_merge() -> None:
    """A missing struct is not a struct of nulls (in a list too), struct fields count in name
    order, a null vector component is not NaN, a float inside an array keeps its NaN, bytes
    hash, and the whitespace rule is ``normalise_ws``'s (Python's ``\\s`` includes \\x1f)."""
    edge = pl.Struct({"dst": pl.String(), "relation": pl.String()})
    one = pl.DataFrame({"e": [None]}, schema={"e": edge})
    nulls = pl.DataFrame({"e": [{"dst": None, "relation": None}]}, schema={"e": edge})
    assert content_hash(one) != content_hash(nulls)
    listed = {"e": pl.List(edge)}
    assert content_hash(pl.DataFrame({"e": [[None]]}, schema=listed)) != content_hash(
        pl.DataFrame({"e": [[{"dst": None, "relation": None}]]}, schema=listed))
    ab = pl.DataFrame({"s": [{"a": 1, "b": 2}]})
    ba = pl.DataFrame({"s": [{"b": 2, "a": 1}]})
    assert content_hash(ab) == content_hash(ba)
    vec = {"v": pl.Array(pl.Float32(), 2)}
    assert content_hash(pl.DataFrame({"v": [[None, 1.0]]}, schema=vec)) != content_hash(
        pl.DataFrame({"v": [[float("nan"), 1.0]]}, schema=vec))
    nested = {"v": pl.List(pl.Array(pl.Float64(), 2))}
    assert content_hash(pl.DataFrame({"v": [[[float("nan"), 1.0]]]}, schema=nested)) != content_hash(
        pl.DataFrame({"v": [[[None, 1.0]]]}, schema=nested))
    assert content_hash(pl.DataFrame({"b": [b"\x00"]})) != content_hash(pl.DataFrame({"b": [b"\x01"]}))
    assert normalise_ws("a\x1fb") == "a b"
    assert semantic_hash(pl.DataFrame({"t": ["a\x1fb"]})) == semantic_hash(pl.DataFrame({"t": ["a b"]}))


def test_hashes_of_parts_equal_the_hashes_of_the_whole_table() -> None:
    """The manifest hashes a per-document table a group of partitions at a time: the same
    figures as the concatenated table, whatever the split (empty parts included)."""
    import edaqa_pipeline.storage.hashing as hashing

    df = frame(extract_artifacts(blocks_of(GRID)), ARTIFACTS_SCHEMA)
    whole = {"rows": df.height, "content_hash": content_hash(df), "semantic_hash": semantic_hash(df)}
    assert df.height >= 3
    parts = [df.slice(0, 1), df.clear(), df.slice(1, 1), df.slice(2)]
    assert hashing.summary_of_parts(parts) == whole
    assert hashing.summary_of_parts(reversed(parts)) == whole
    assert hashing.summary_of_parts([df.clear()])["content_hash"] == content_hash(df.clear())
    assert hashing.summary_of_parts([]) is None
    with pytest.raises(ValueError, match="different columns"):
        hashing.summary_of_parts([df, df.drop("rule")])
    rows_at_once = hashing.SLICE_ROWS
    try:  # rows are serialised a slice at a time: the slice size changes nothing
        hashing.SLICE_ROWS = 1
        assert (content_hash(df), semantic_hash(df)) == (whole["content_hash"], whole["semantic_hash"])
    finally:
        hashing.SLICE_ROWS = rows_at_once


def test_semantic_hash_ignores_line_numbers_and_whitespace() -> None:
    df = frame(extract_artifacts(blocks_of(GRID)), ARTIFACTS_SCHEMA)
    moved = df.with_columns(pl.col("start_line") + 10, pl.col("end_line") + 10)
    spaced = df.with_columns(pl.col("content").str.replace_all(" ", "  \n "))
    assert content_hash(moved) != content_hash(df)
    assert content_hash(spaced) != content_hash(df)
    assert semantic_hash(moved) == semantic_hash(spaced) == semantic_hash(df)


def test_hashes_of_empty_tables() -> None:
    empty = frame([], ARTIFACTS_SCHEMA)
    assert content_hash(empty) == content_hash(frame([], ARTIFACTS_SCHEMA))
    assert content_hash(empty) != content_hash(frame([], CHUNKS_SCHEMA))  # columns count
