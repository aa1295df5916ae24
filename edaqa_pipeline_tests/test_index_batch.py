"""Many documents in one run (``BackfillPolicy.single_run``), each failing alone.

One module-scoped scenario on one ephemeral instance: a ``build_index`` run over the range of
five partitions (two good manuals, one whose structural check is made to fail, one with
invalid UTF-8, one without blocks), exactly what ``edaqa index``, the corpus sensor and a UI
backfill launch. The run must succeed; the good documents are stored; the bad ones are left
out, named in their partitions' metadata and in WARN check results; the failed-documents
sensor asks for one strict run per bad document, and that run fails with the file named.
A second identical run reuses every stored table (nothing computed, nothing encoded).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from dagster import (
    AssetCheckSeverity,
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    build_run_status_sensor_context,
    in_process_executor,
)

from edaqa_pipeline.assets.document_state import FAILED, latest_records
from edaqa_pipeline.assets.partitions import DOCUMENT_ASSETS, DOCUMENTS, ISOLATE_FAILURES_TAG
from edaqa_pipeline.cli.index_build import spans
from edaqa_pipeline.definitions import build_definitions
from edaqa_pipeline.sensors import failed_documents, failed_documents_sensor, range_tags
from edaqa_pipeline.settings import Settings
from edaqa_pipeline_tests.dagster_fixtures import (
    CORRUPT_DOC,
    DOC_A,
    DOC_B,
    INJECTED_PROBLEM,
    NO_BLOCKS_DOC,
    failing_structure_check,
    make_settings,
    offline_environment,
    step_failures,
    write_corpus,
)

pytestmark = pytest.mark.slow

ORDER = ["a.md", "corrupt.md", "rejected.md", "b.md", "empty.md"]
GOOD = ["a.md", "b.md"]
BAD = {"corrupt.md": "UTF-8", "empty.md": "no Markdown content", "rejected.md": INJECTED_PROBLEM}


@dataclass
class Batch:
    cfg: Settings
    defs: Any
    instance: DagsterInstance
    first: Any
    second: Any
    strict: dict[str, Any]
    failed: dict[str, str]

    def stored(self, asset: str, key: str) -> Path:
        return self.cfg.tables_dir / asset / f"{key}.parquet"

    def metadata(self, result: Any, asset: str) -> dict[str, Any]:
        """Step-level metadata of ``asset`` in ``result`` (same on every partition's event)."""
        for event in result.all_events:
            if event.event_type_value == "ASSET_MATERIALIZATION":
                mat = event.event_specific_data.materialization
                if mat.asset_key.to_user_string() == asset:
                    return {k: v.value for k, v in mat.metadata.items()}
        raise AssertionError(f"no materialization of {asset}")


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("batch")
    corpus = write_corpus(root / "corpus", {
        "a.md": DOC_A, "b.md": DOC_B, "rejected.md": DOC_A.replace("Placement", "Legalisation"),
        "corrupt.md": CORRUPT_DOC, "empty.md": NO_BLOCKS_DOC,
    })  # fmt: skip
    cfg = make_settings(corpus, root / "storage")
    with offline_environment():
        defs = build_definitions(cfg, executor=in_process_executor)
        instance = DagsterInstance.ephemeral()
        instance.add_dynamic_partitions(DOCUMENTS, ORDER)
        tags = {**range_tags(ORDER, ORDER), ISOLATE_FAILURES_TAG: "1"}
        job = defs.resolve_job_def("build_index")
        with failing_structure_check("rejected.md"):
            first = job.execute_in_process(instance=instance, tags=tags, raise_on_error=False)
            failed = failed_documents(instance, first.run_id)
            (success,) = instance.all_logs(first.run_id, of_type=DagsterEventType.RUN_SUCCESS)
            context = build_run_status_sensor_context(
                sensor_name="failed_documents_sensor", dagster_instance=instance,
                dagster_run=instance.get_run_by_id(first.run_id), dagster_event=success.dagster_event,
            )
            requests = failed_documents_sensor(context)
            strict = {}
            for request in requests:
                job_def = defs.resolve_job_def(request.job_name or "index_document")
                strict[request.partition_key] = job_def.execute_in_process(
                    instance=instance, partition_key=request.partition_key, tags=request.tags,
                    raise_on_error=False)
            second = job.execute_in_process(instance=instance, tags=tags, raise_on_error=False)
        yield Batch(cfg, defs, instance, first, second, strict, failed)
        instance.dispose()


def test_one_run_builds_every_document_and_the_corpus(batch):
    assert batch.first.success, step_failures(batch.first)
    steps = {e.step_key for e in batch.first.all_events if e.event_type_value == "STEP_START"}
    assert set(DOCUMENT_ASSETS) <= steps and {"functional_units", "chunk_index"} <= steps
    for asset in ("parsed_documents", "chunks", "chunk_embeddings"):
        meta = batch.metadata(batch.first, asset)
        assert meta["batch_documents"] == len(ORDER), asset
    assert batch.metadata(batch.first, "chunk_embeddings")["batch_encoded"] == sum(
        pl.read_parquet(batch.stored("chunks", k)).height for k in GOOD)


def test_the_run_holds_no_written_table(batch):
    """``execute_in_process`` keeps every step's output value until the run ends: a written
    per-document frame must have been let go (``KEEP_STORED`` in its place), while every good
    document's table is on disk."""
    from edaqa_pipeline.assets.io_manager import KEEP_STORED

    for asset in ("parsed_documents", "chunks", "chunk_embeddings"):
        held = batch.first.output_for_node(asset)
        assert set(GOOD) <= set(held), asset
        assert all(value is KEEP_STORED for value in held.values()), asset
        assert all(batch.stored(asset, key).is_file() for key in GOOD), asset


def test_good_documents_are_stored_and_bad_ones_are_not(batch):
    for key in GOOD:
        for asset in ("parsed_documents", "typed_artifacts", "chunks", "occurrences", "chunk_embeddings"):
            assert batch.stored(asset, key).is_file(), (asset, key)
    for key in BAD:
        assert not list(batch.cfg.tables_dir.glob(f"*/{key}.parquet")), key
    summary = pl.read_parquet(batch.cfg.tables_dir / "chunk_index.parquet")
    assert summary["document"].to_list() == GOOD


def test_failed_documents_are_named_in_their_partitions_metadata(batch):
    assert set(batch.failed) == set(BAD)
    for key, words in BAD.items():
        assert batch.failed[key].startswith(f"{key}: ") or "check structurally_valid" in batch.failed[key]
        assert words in batch.failed[key], batch.failed[key]
    records = latest_records(batch.instance, "chunks", ORDER)
    assert {k for k, r in records.items() if FAILED in r.metadata} == set(BAD)


def test_checks_warn_about_left_out_documents_without_blocking_the_others(batch):
    evaluations = {e.asset_check_key.to_user_string(): e for e in batch.first.get_asset_check_evaluations()}
    structure = evaluations["parsed_documents:structurally_valid"]
    assert structure.passed is False and structure.severity == AssetCheckSeverity.WARN
    assert "rejected.md" in structure.metadata["problems"].value
    assert evaluations["chunks:structurally_valid"].passed


def test_each_failed_document_gets_a_strict_run_that_fails_naming_it(batch):
    assert set(batch.strict) == set(BAD)
    for key, result in batch.strict.items():
        assert result.success is False, key
        failure = step_failures(result)["parsed_documents"]
        described = failure.user_failure_data.description if failure.user_failure_data else ""
        if key == "rejected.md":
            assert failure.error is not None and failure.error.cls_name == "DagsterAssetCheckFailedError"
        else:
            assert described.startswith(f"{key}: ") and BAD[key] in described


def test_an_identical_second_run_reuses_every_stored_table(batch):
    assert batch.second.success, step_failures(batch.second)
    for asset in DOCUMENT_ASSETS:
        meta = batch.metadata(batch.second, asset)
        assert meta["batch_reused"] == len(GOOD), asset
        assert meta["batch_computed"] == 0, asset
    assert "batch_encoded" not in batch.metadata(batch.second, "chunk_embeddings")
    rows = batch.instance.get_latest_materialization_event(AssetKey("unit_hyperedges"))
    assert rows is not None


@pytest.mark.parametrize(("todo", "expected"), [
    (set(), []),
    ({"d03"}, [["d03"]]),
    ({"d00", "d01", "d05"}, [["d00", "d01", "d02", "d03", "d04", "d05"]]),
    ({"d00", "d99"}, [["d00"], ["d99"]]),
])
def test_spans_cover_stale_documents_in_a_few_runs(todo, expected):
    order = [f"d{i:02d}" for i in range(100)]
    assert spans(order, todo, max_gap=10) == expected


def test_spans_are_bounded():
    order = [f"d{i:03d}" for i in range(200)]
    runs = spans(order, {order[i] for i in range(0, 200, 20)}, max_gap=5, max_runs=3)
    assert len(runs) == 3
    assert {k for run in runs for k in run} >= {order[i] for i in range(0, 200, 20)}
