"""Parallel writers (multiprocess executor steps) may race to create the same LanceDB table."""

import multiprocessing as mp
from pathlib import Path
from typing import Any

DIM = 384  # any width: the schema is built for the encoder's width (here MiniLM's)


def _open_units(uri: str, barrier: Any, results: Any) -> None:
    from edaqa_pipeline.retrieval import lance_store

    db = lance_store.connect(uri)
    barrier.wait()  # every process asks for the missing table at the same moment
    try:
        results.put(("ok", lance_store._table(db, "units", lance_store.unit_schema(DIM)).count_rows()))
    except Exception as exc:
        results.put(("error", repr(exc)))


def test_racing_processes_all_get_the_one_table(tmp_path: Path) -> None:
    """Four processes creating the same table at once: all open it (the check-then-create
    version failed 3 of 4 with "already exists" / "not found"), and exactly one table exists."""
    from edaqa_pipeline.retrieval import lance_store

    uri = str(tmp_path / "lancedb")
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_open_units, args=(uri, barrier, results)) for _ in range(4)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    assert outcomes == [("ok", 0)] * 4
    tables = lance_store.connect(uri).list_tables()
    assert list(getattr(tables, "tables", tables)) == ["units"]


def test_vector_index_appears_at_the_row_threshold(tmp_path: Path) -> None:
    """Below ``min_rows`` searches stay flat; at it an IVF_PQ index is built and used, and the
    nearest neighbour of a stored vector is still that vector."""
    import numpy as np

    from edaqa_pipeline.retrieval import lance_store

    uri = str(tmp_path / "lancedb")
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((600, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    schema = lance_store.unit_schema(DIM)
    rows = [{"unit_id": f"u{i:04d}", "document": "d.md", "summary": "", "content_hash": str(i)}
            for i in range(600)]
    lance_store.replace_rows(uri, lance_store.UNIT_TABLE, schema, "unit_id",
                             lance_store.to_arrow(rows[:300], vectors[:300], schema))
    assert lance_store.ensure_vector_index(uri, lance_store.UNIT_TABLE, min_rows=512) is False
    table = lance_store.connect(uri).open_table(lance_store.UNIT_TABLE)
    assert not [ix for ix in table.list_indices() if "vector" in ix.columns]
    lance_store.replace_rows(uri, lance_store.UNIT_TABLE, schema, "unit_id",
                             lance_store.to_arrow(rows, vectors, schema))
    assert lance_store.ensure_vector_index(uri, lance_store.UNIT_TABLE, min_rows=512) is True
    table = lance_store.connect(uri).open_table(lance_store.UNIT_TABLE)
    [index] = [ix for ix in table.list_indices() if "vector" in ix.columns]
    assert index.index_type.startswith("IvfPq")
    hit = table.search(vectors[123]).distance_type("cosine").nprobes(8).refine_factor(5).limit(1).to_list()
    assert hit[0]["unit_id"] == "u0123"
