import os
import tempfile
from pathlib import Path

import pytest

# ONNX query exports of the test run go to a temporary cache, not the user's ~/.cache
os.environ.setdefault("EDAQA_ONNX_CACHE", str(Path(tempfile.gettempdir()) / "edaqa-test-onnx"))

pytest_plugins = ["edaqa_pipeline_tests.conftest_llm", "edaqa_pipeline_tests.fixtures_index"]


@pytest.fixture
def persistent_instance(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A Dagster instance on disk, one per test (test_corpus_sensor.py, test_nightly_schedule.py)."""
    from dagster import DagsterInstance

    # build_schedule_context keeps only an InstanceRef, which an ephemeral instance has not.
    home = tmp_path / "dagster_home"
    home.mkdir()
    instance = DagsterInstance.local_temp(tempdir=str(home))
    try:
        yield instance
    finally:
        instance.dispose()
