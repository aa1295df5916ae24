"""Incremental indexing through Dagster equals a fresh full build (paper Appendix B), and an
index killed mid-way (kill -9) resumes to the same outputs.

Each scenario compares the seven unit tables' ``content_hash`` in ``manifest.json`` (and the
per-document tables) after an update against a fresh build of the same final corpus.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, SensorResult, build_sensor_context

from edaqa_pipeline.cli.index import index_corpus
from edaqa_pipeline.graphs.functional_units import UNIT_TABLE_NAMES
from edaqa_pipeline_tests.fixtures_index import copy_corpus

pytestmark = pytest.mark.slow

DOCS = ["floorplan.md", "overview.md", "placement.md"]
COMPARED = (*UNIT_TABLE_NAMES, "typed_artifacts", "occurrences", "chunks")


def _hashes(storage: Path) -> dict[str, str]:
    tables = json.loads((storage / "manifest.json").read_text())["tables"]
    return {name: tables[name]["content_hash"] for name in COMPARED}


def _fresh(tmp: Path, files: dict[str, bytes]) -> dict[str, str]:
    corpus = tmp / "fresh_corpus"
    corpus.mkdir()
    for name, data in files.items():
        (corpus / name).write_bytes(data)
    index_corpus(corpus, tmp / "fresh_storage", log=lambda *_: None)
    return _hashes(tmp / "fresh_storage")


def _files(corpus: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(corpus.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("incremental")
    corpus = copy_corpus(root / "corpus", DOCS[:2])
    storage = root / "storage"
    index_corpus(corpus, storage, log=lambda *_: None)
    return corpus, storage


def test_add_document_equals_full_build(live: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, storage = live
    copy_corpus(corpus, [DOCS[2]])
    report = index_corpus(corpus, storage, log=lambda *_: None)
    assert report.reindexed == [DOCS[2]]  # only the new document re-ran
    meta = json.loads((storage / "manifest.json").read_text())
    assert meta["units"]["units_cross_document"] >= 1
    assert _hashes(storage) == _fresh(tmp_path, _files(corpus))


def test_change_document_equals_full_build(live: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, storage = live
    path = corpus / "overview.md"
    path.write_text(path.read_text() + "\n## Added section\n\nRun `place_cells` with `-density 0.5`.\n")
    report = index_corpus(corpus, storage, log=lambda *_: None)
    assert report.reindexed == ["overview.md"]
    assert _hashes(storage) == _fresh(tmp_path, _files(corpus))


def test_delete_document_equals_full_build(live: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, storage = live
    if not (corpus / "placement.md").exists():  # alone or before the add test: add it first
        copy_corpus(corpus, ["placement.md"])
        index_corpus(corpus, storage, log=lambda *_: None)
    (corpus / "placement.md").unlink()
    report = index_corpus(corpus, storage, log=lambda *_: None)
    assert report.deleted == ["placement.md"] and report.reindexed == []
    assert _hashes(storage) == _fresh(tmp_path, _files(corpus))
    manifest = json.loads((storage / "manifest.json").read_text())
    assert "placement.md" not in manifest["documents"]


def test_a_per_document_table_missing_reruns_only_that_document(live: tuple[Path, Path], tmp_path: Path) -> None:
    """An asset added to the pipeline after a document was indexed (here: its `elements`
    partition removed) makes the next index run that document again, and only that one."""
    corpus, storage = live
    assert index_corpus(corpus, storage, log=lambda *_: None).reindexed == []  # nothing to do
    missing = storage / "tables" / "elements" / "floorplan.md.parquet"
    missing.unlink()
    report = index_corpus(corpus, storage, log=lambda *_: None)
    assert report.reindexed == ["floorplan.md"]
    assert missing.is_file()
    assert _hashes(storage) == _fresh(tmp_path, _files(corpus))


def test_change_through_the_sensor_equals_full_build(tmp_path: Path) -> None:
    """The sensor path: tick -> one requested run (documents + corpus), on one instance."""
    from dagster import in_process_executor

    from edaqa_pipeline.definitions import build_definitions
    from edaqa_pipeline.resources import PipelineSettings
    from edaqa_pipeline.sensors import corpus_sensor
    from edaqa_pipeline.settings import settings_for

    corpus = copy_corpus(tmp_path / "corpus", DOCS[:2])
    storage = tmp_path / "storage"
    cfg = settings_for(corpus, storage)
    defs = build_definitions(cfg, executor=in_process_executor)
    instance = DagsterInstance.ephemeral()
    resources = {"settings": PipelineSettings(corpus_root=str(corpus), storage_root=str(storage),
                                              lancedb_uri=cfg.lancedb_uri)}

    def tick(cursor: str | None) -> str:
        context = build_sensor_context(instance=instance, cursor=cursor, resources=resources)
        result = corpus_sensor(context)
        for request in getattr(result, "dynamic_partitions_requests", None) or []:
            if type(request).__name__ == "AddDynamicPartitionsRequest":
                instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
            else:
                for key in request.partition_keys:
                    instance.delete_dynamic_partition(request.partitions_def_name, key)
        runs = getattr(result, "run_requests", None) or []
        for run in runs:  # one run: build_index over the new/changed documents, or assemble_corpus
            assert run.job_name in ("build_index", "assemble_corpus") and run.partition_key is None
            job = defs.resolve_job_def(run.job_name)
            assert job.execute_in_process(instance=instance, tags=run.tags).success
        assert len(runs) <= 1
        return result.cursor if isinstance(result, SensorResult) else context.cursor

    from edaqa_pipeline.cli.index import table_summary

    cursor = tick(None)
    copy_corpus(corpus, [DOCS[2]])
    cursor = tick(cursor)
    live = {k: v["content_hash"] for k, v in table_summary(cfg, sorted(DOCS)).items() if k in COMPARED}
    assert live == _fresh(tmp_path, _files(corpus))
    # A file deleted: its partition goes, and its stored tables go with it (chunk_index).
    (corpus / DOCS[0]).unlink()
    tick(cursor)
    assert not list((storage / "tables").glob(f"*/{DOCS[0]}.parquet"))
    live = {k: v["content_hash"] for k, v in table_summary(cfg, DOCS[1:]).items() if k in COMPARED}
    shutil.rmtree(tmp_path / "fresh_corpus")
    shutil.rmtree(tmp_path / "fresh_storage")
    assert live == _fresh(tmp_path, _files(corpus))


def test_kill_minus_9_then_rerun_gives_identical_outputs(tmp_path: Path) -> None:
    corpus = copy_corpus(tmp_path / "corpus", DOCS)
    storage = tmp_path / "storage"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    cmd = [sys.executable, "-m", "edaqa_pipeline.cli", "index", "--corpus", str(corpus),
           "--storage", str(storage), "--quiet"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGTERM)])
    parsed = storage / "tables" / "parsed_documents"
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if parsed.is_dir() and any(parsed.glob("*.parquet")):
                break  # the first step stored its tables, the later ones not yet
            time.sleep(0.2)
        assert proc.poll() is None, "index finished before it could be interrupted"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert not (storage / "manifest.json").exists()
    assert not (storage / "index_state.json").exists()  # the instance is the only record
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    shutil.rmtree(tmp_path / "fresh_corpus", ignore_errors=True)
    assert _hashes(storage) == _fresh(tmp_path, _files(corpus))
