"""Shared helpers of the sensor and schedule tests (test_corpus_sensor.py,
test_nightly_schedule.py): a repository of the definitions, the document range of a run."""

from __future__ import annotations

from pathlib import Path

from dagster import RunRequest, in_process_executor
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from edaqa_pipeline.definitions import build_definitions
from edaqa_pipeline_tests.dagster_fixtures import DOC_C, make_settings, write_corpus


def _repository(tmp_path: Path):  # type: ignore[no-untyped-def]
    corpus = write_corpus(tmp_path / "repo_corpus", {"x.md": DOC_C})
    defs = build_definitions(
        make_settings(corpus, tmp_path / "repo_storage"), executor=in_process_executor
    )
    return defs.get_repository_def()


def _range(run: RunRequest) -> tuple[str, str]:
    """(first, last) partition of a run over a range of documents."""
    assert run.partition_key is None
    return run.tags[ASSET_PARTITION_RANGE_START_TAG], run.tags[ASSET_PARTITION_RANGE_END_TAG]
