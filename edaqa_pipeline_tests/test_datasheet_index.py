"""``edaqa index`` over the real datasheet corpus: every PDF indexes, none fails.

Runs ``edaqa_pipeline.cli.index.index_corpus`` (the function behind ``edaqa index``: Dagster,
the IO manager, every blocking check) on ``../shared/corpus/datasheets`` -- four PDFs and the
corpus's SOURCES.md. Under ``CI=true`` a missing corpus fails the test (the corpus is part of
the CI setup); elsewhere it skips. Time: about 6 min on the loaded 2-core VM, most of it the
chunk and unit embeddings (``manifest.json`` timings), the datasheet assets about 20 s.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

DATASHEETS = Path(__file__).resolve().parents[2] / "shared/corpus/datasheets"
PDFS = ["ihp_sg13g2_io_typ_1p2V_3p3V_25C.pdf", "ihp_sg13g2_process_spec.pdf", "veer_eh1_prm.pdf",
        "wishbone_b3_spec.pdf"]


def _corpus() -> Path:
    if not all((DATASHEETS / name).is_file() for name in PDFS):
        message = f"the datasheet corpus is missing under {DATASHEETS}"
        if os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}:
            pytest.fail(f"CI=true but {message}", pytrace=False)
        pytest.skip(message)
    return DATASHEETS


@pytest.mark.slow
def test_edaqa_index_over_the_datasheet_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from edaqa_pipeline.cli.index import index_corpus

    corpus = _corpus()
    for var in ("EDAQA_LLM_BASE_URL", "EDAQA_LLM_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("EDAQA_LLM_PROVIDER", "offline")
    storage = tmp_path / "storage"
    report = index_corpus(corpus, storage, log=lambda *_: None)
    assert report.failed == [], report.failed
    assert set(PDFS) <= set(report.documents)
    manifest = json.loads((storage / "manifest.json").read_text())
    assert manifest["failed"] == []
    tables = storage / "tables"
    for name in PDFS:
        chunks = pl.read_parquet(tables / "datasheet_chunks" / f"{name}.parquet")
        assert chunks.height > 0 and chunks["chunk_id"].n_unique() == chunks.height, name
        props = pl.read_parquet(tables / "datasheet_properties" / f"{name}.parquet")
        assert props.height > 0 and props["property_id"].n_unique() == props.height, name
    nodes = pl.read_parquet(tables / "hardware_kgs.parquet")
    assert set(nodes["kg_id"].unique().to_list()) == set(PDFS)
