"""CI-sized evaluation on the sample corpus: every method scored, methods differ, two runs give
identical metrics except latency, and the Dagster ``eval_reports`` asset writes the report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dagster import DagsterInstance, in_process_executor

from edaqa_pipeline_tests.fixtures_index import REPO

METHODS = ["bm25", "dense", "hybrid_rrf", "fa_units", "fa_hybrid"]
LATENCY = {"latency_ms_p50", "latency_ms_p95"}


def _eval(storage: Path, out: Path) -> dict:
    subprocess.run(
        [sys.executable, "-m", "edaqa_pipeline.cli", "eval", "--storage", str(storage),
         "--qa", str(REPO / "data" / "sample_qa.jsonl"), "--methods", ",".join(METHODS),
         "--out", str(out), "--no-progress"],
        check=True, capture_output=True, text=True, timeout=600,
    )
    return json.loads((out / "metrics.json").read_text())


def _without_latency(metrics: dict) -> dict:
    def strip(values: dict) -> dict:
        return {k: v for k, v in values.items() if k not in LATENCY}

    return {
        "methods": {m: strip(v) for m, v in metrics["methods"].items()},
        "by_category": {c: {m: strip(v) for m, v in per.items()} for c, per in metrics["by_category"].items()},
        "n": metrics["n_questions"],
    }


def test_eval_on_sample_corpus_is_complete_distinct_and_reproducible(sample_index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    first = _eval(storage, tmp_path / "a")
    second = _eval(storage, tmp_path / "b")
    assert first["n_questions"] == 14
    assert sorted(first["methods"]) == sorted(METHODS)
    for method in METHODS:
        values = first["methods"][method]
        for metric in ("span_hit@2048t", "span_cover@2048t", "doc_recall@1", "doc_recall@5", "mrr@10",
                       "rougeL", "bleu", "atomic_f1", "latency_ms_p50", "context_tokens_mean"):
            assert metric in values, (method, metric)
            assert values[metric] >= 0
    distinct = {json.dumps(first["methods"][m] | {k: 0 for k in LATENCY}, sort_keys=True) for m in METHODS}
    assert len(distinct) >= 3, "methods should not all score the same"
    assert _without_latency(first) == _without_latency(second)
    assert {"parameter_lookup", "cross_document"} <= set(first["by_category"])
    results = [json.loads(line) for line in (tmp_path / "a" / "results.jsonl").read_text().splitlines()]
    assert len(results) == 14 * len(METHODS)
    assert all(r["evidence"] and r["answer"] for r in results)
    for name in ("report.md", "report.html"):
        text = (tmp_path / "a" / name).read_text()
        assert all(m in text for m in METHODS)


def test_eval_reports_asset_materialises(sample_index) -> None:  # type: ignore[no-untyped-def]
    from edaqa_pipeline.definitions import build_definitions
    from edaqa_pipeline.registry import available_methods
    from edaqa_pipeline.settings import settings_for

    corpus, storage, _ = sample_index
    built = available_methods(storage)
    # The core methods always; hwkg because the sample corpus has a datasheet PDF; the optional
    # graphs (techdoc, chipmind, fa_hybrid_tuned) only if a test built them on this index.
    assert set(METHODS) | {"hwkg"} <= set(built)
    defs = build_definitions(settings_for(corpus, storage), executor=in_process_executor)
    result = defs.resolve_job_def("evaluate").execute_in_process(instance=DagsterInstance.ephemeral())
    assert result.success
    frame = result.output_for_node("eval_reports")
    assert set(frame["method"].unique().to_list()) == set(built)
    [event] = result.get_asset_materialization_events()
    metadata = event.materialization.metadata
    assert "| fa_hybrid |" in metadata["report"].value
    assert (storage / "eval" / "sample_qa" / "report.html").is_file()
