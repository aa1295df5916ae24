"""Structural rules every table must satisfy, as pure functions returning problems.

Each function returns a list of human-readable problems (empty = valid) so that a Dagster
asset check, a test or a script can use the same rule. Rules: ids unique; line spans valid
and inside the document; type labels in the schema; no empty content; every occurrence has
at least one artifact and one chunk; every retained unit is structurally valid; every block
and chunk carries one line kind per line of its text, each a kind of ``parsing.lines``.
"""

from __future__ import annotations

import polars as pl

from edaqa_pipeline.model import ARTIFACT_TYPES, BLOCK_KINDS
from edaqa_pipeline.parsing.lines import LINE_KINDS

MAX_REPORTED = 5


def _few(values: list) -> str:  # type: ignore[type-arg]
    shown = ", ".join(map(str, values[:MAX_REPORTED]))
    return shown + (f" (+{len(values) - MAX_REPORTED} more)" if len(values) > MAX_REPORTED else "")


def unique_ids(df: pl.DataFrame, column: str) -> list[str]:
    dup = df.group_by(column).len().filter(pl.col("len") > 1)[column].to_list()
    return [f"{len(dup)} duplicate {column} values: {_few(sorted(dup))}"] if dup else []


def valid_spans(df: pl.DataFrame, n_lines: int | None, id_column: str) -> list[str]:
    """Markdown rows need 1 <= start <= end <= n_lines; PDF rows need a page >= 1."""
    problems: list[str] = []
    if df.is_empty():
        return problems
    md = df.filter(pl.col("page").is_null())
    bad = md.filter(
        pl.col("start_line").is_null()
        | pl.col("end_line").is_null()
        | (pl.col("start_line") < 1)
        | (pl.col("end_line") < pl.col("start_line"))
        | ((pl.col("end_line") > n_lines) if n_lines else pl.lit(False))
    )
    if bad.height:
        problems.append(f"{bad.height} rows with an invalid line span: {_few(bad[id_column].to_list())}")
    pdf = df.filter(pl.col("page").is_not_null())
    badp = pdf.filter(pl.col("page") < 1)
    if badp.height:
        problems.append(f"{badp.height} rows with an invalid page: {_few(badp[id_column].to_list())}")
    return problems


def labels_in(df: pl.DataFrame, column: str, allowed: tuple[str, ...]) -> list[str]:
    bad = sorted(set(df[column].unique().to_list()) - set(allowed))
    return [f"{column} values outside the schema: {_few(bad)}"] if bad else []


def non_empty(df: pl.DataFrame, column: str, id_column: str) -> list[str]:
    bad = df.filter(pl.col(column).is_null() | (pl.col(column).str.strip_chars() == ""))
    return [f"{bad.height} rows with empty {column}: {_few(bad[id_column].to_list())}"] if bad.height else []


def line_kind_problems(df: pl.DataFrame, text_column: str, id_column: str) -> list[str]:
    """Every row has one line kind per line of ``text_column``, each one of ``LINE_KINDS``
    (what focus, answers and metrics read instead of re-detecting the structure)."""
    if df.is_empty():
        return []
    counts = df[text_column].str.count_matches("\n") + 1
    bad = df.filter(pl.col("line_kinds").list.len() != counts)
    problems = []
    if bad.height:
        problems.append(f"{bad.height} rows whose line_kinds do not match their lines: "
                        f"{_few(bad[id_column].to_list())}")
    unknown = sorted(set(df["line_kinds"].explode().drop_nulls().to_list()) - set(LINE_KINDS))
    if unknown:
        problems.append(f"line kinds outside parsing.lines.LINE_KINDS: {_few(unknown)}")
    return problems


def block_problems(df: pl.DataFrame, n_lines: int | None) -> list[str]:
    if df.is_empty():
        return ["document produced no blocks"]
    return (
        unique_ids(df, "block_id")
        + valid_spans(df, n_lines, "block_id")
        + labels_in(df, "kind", BLOCK_KINDS)
        + non_empty(df.filter(pl.col("kind") != "figure"), "text", "block_id")
        + line_kind_problems(df, "raw", "block_id")
    )


def artifact_problems(df: pl.DataFrame, n_lines: int | None) -> list[str]:
    return (
        unique_ids(df, "artifact_id")
        + valid_spans(df, n_lines, "artifact_id")
        + labels_in(df, "artifact_type", ARTIFACT_TYPES)
        + non_empty(df, "content", "artifact_id")
    )


def chunk_problems(df: pl.DataFrame, n_lines: int | None) -> list[str]:
    return (unique_ids(df, "chunk_id") + valid_spans(df, n_lines, "chunk_id") + non_empty(df, "text", "chunk_id")
            + line_kind_problems(df, "text", "chunk_id"))


def occurrence_problems(df: pl.DataFrame, artifacts: pl.DataFrame, chunks: pl.DataFrame) -> list[str]:
    problems = unique_ids(df, "occurrence_id")
    no_art = df.filter(pl.col("artifact_ids").list.len() == 0)
    if no_art.height:
        problems.append(f"{no_art.height} occurrences without artifacts: {_few(no_art['occurrence_id'].to_list())}")
    no_chunk = df.filter(pl.col("chunk_ids").list.len() == 0)
    if no_chunk.height:
        problems.append(f"{no_chunk.height} occurrences without chunks: {_few(no_chunk['occurrence_id'].to_list())}")
    known_a = set(artifacts["artifact_id"].to_list())
    known_c = set(chunks["chunk_id"].to_list())
    dangling = [a for ids in df["artifact_ids"].to_list() for a in ids if a not in known_a]
    dangling += [c for ids in df["chunk_ids"].to_list() for c in ids if c not in known_c]
    if dangling:
        problems.append(f"{len(dangling)} references to unknown artifacts/chunks: {_few(dangling)}")
    return problems


def unit_problems(tables: dict[str, pl.DataFrame], cap: int) -> list[str]:
    """Zero invalid retained units: every rule the linker enforces, re-checked on its output."""
    edges = tables["unit_hyperedges"]
    problems = unique_ids(edges, "unit_id")
    empty = edges.filter((pl.col("n_artifacts") == 0) | (pl.col("n_chunks") == 0))
    if empty.height:
        problems.append(f"{empty.height} empty units (no artifacts or chunks): {_few(empty['unit_id'].to_list())}")
    bad_types = sorted({t for ts in edges["artifact_types"].to_list() for t in ts} - set(ARTIFACT_TYPES))
    if bad_types:
        problems.append(f"invalid type labels in units: {_few(bad_types)}")
    cross = edges.filter(pl.col("kind") == "cross_document")
    low = cross.filter((pl.col("artifact_types").list.len() < 2) | (pl.col("documents").list.len() < 2))
    if low.height:
        problems.append(f"{low.height} cross-document units lacking type or document diversity")
    over = cross.filter(pl.col("occurrence_ids").list.len() > cap)
    if over.height:
        problems.append(f"{over.height} cross-document units above the cap of {cap}")
    from edaqa_pipeline.extraction.anchors import rejection_reason

    placeholder = [a for a in cross["anchor"].to_list() if rejection_reason(a)]
    if placeholder:
        problems.append(f"cross-document units on non-linkable anchors: {_few(placeholder)}")
    known_chunks = set(tables["unit_chunk_contents"]["chunk_id"].to_list())
    missing = [c for c in tables["unit_chunk_edges"]["chunk_id"].to_list() if c not in known_chunks]
    if missing:
        problems.append(f"{len(missing)} unit-chunk edges to chunks without content: {_few(missing)}")
    prov_units = set(tables["unit_provenance"]["unit_id"].to_list())
    no_prov = [u for u in edges["unit_id"].to_list() if u not in prov_units]
    if no_prov:
        problems.append(f"{len(no_prov)} units without provenance: {_few(no_prov)}")
    return problems
