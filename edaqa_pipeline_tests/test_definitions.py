"""The code location: it validates with the dagster CLI and holds exactly the expected assets,
checks, jobs, sensors and schedule (what `dagster dev` and the daemon will see)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from dagster import AssetKey, AutomationConditionSensorDefinition, Definitions, in_process_executor

from edaqa_pipeline.assets.partitions import DOCUMENTS
from edaqa_pipeline.definitions import build_definitions
from edaqa_pipeline_tests.dagster_fixtures import (
    ALL_ASSETS,
    CORPUS_ASSETS,
    DOCUMENT_ASSETS,
    HWKG_CORPUS_ASSETS,
    JOBS,
    PARTITIONED_ASSETS,
    REPO,
    SCHEDULES,
    SENSORS,
    UNIT_ASSETS,
    VENV_BIN,
    make_settings,
    offline_environment,
    subprocess_env,
    write_corpus,
    write_dagster_home,
)

# Assets that have no check today although every asset should have one (see the xfail test
# below): the four unit tables without any AssetCheckSpec, and the evaluation report.
ASSETS_WITHOUT_CHECKS_TODAY: frozenset[str] = frozenset()


@pytest.fixture(scope="module")
def defs(tmp_path_factory: pytest.TempPathFactory) -> Definitions:
    root = tmp_path_factory.mktemp("defs")
    corpus = write_corpus(root / "corpus", {"a.md": "# A\n\ntext\n"})
    with offline_environment():
        return build_definitions(
            make_settings(corpus, root / "storage"), executor=in_process_executor
        )


def _user_keys(keys) -> set[str]:  # type: ignore[no-untyped-def]
    return {k.to_user_string() for k in keys}


@pytest.mark.parametrize(
    "target",
    [["-m", "edaqa_pipeline.definitions"], ["-w", "workspace.yaml"]],
    ids=["module", "workspace"],
)
def test_dagster_definitions_validate_exits_zero(tmp_path, target):
    home = write_dagster_home(tmp_path / "dagster_home")
    storage = tmp_path / "storage"
    proc = subprocess.run(
        [str(VENV_BIN / "dagster"), "definitions", "validate", *target],
        cwd=REPO,
        env=subprocess_env(storage, home),
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert "Validation successful" in output, output[-4000:]
    # Loading the code location must not write anything: not into tmp storage, not into the repo.
    assert not storage.exists()


def test_module_level_defs_load_from_environment(tmp_path):
    """`edaqa_pipeline.definitions.defs` reads EDAQA_STORAGE at import (fresh interpreter)."""
    code = (
        "from edaqa_pipeline.definitions import defs\n"
        "s = defs.resources['settings'].settings()\n"
        "print(s.storage_root); print(s.lancedb_uri)\n"
    )
    storage = tmp_path / "storage"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=subprocess_env(storage),
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[-2] == str(storage.resolve())
    assert lines[-1] == str(storage.resolve() / "lancedb")


def test_exact_asset_keys(defs):
    assert _user_keys(defs.resolve_all_asset_keys()) == ALL_ASSETS
    assert len(UNIT_ASSETS) == 7


def test_every_asset_has_group_and_kinds(defs):
    specs = {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}
    for name, spec in specs.items():
        assert spec.group_name and spec.group_name != "default", name
        assert spec.kinds, name
        assert "python" in spec.kinds, name
    groups = {name: specs[name].group_name for name in specs}
    assert {groups[a] for a in DOCUMENT_ASSETS} <= {"documents", "indexes"}
    assert {groups[a] for a in UNIT_ASSETS} == {"functional_units"}
    assert (
        groups["chunk_embeddings"]
        == groups["chunk_index"]
        == groups["unit_embeddings"]
        == "indexes"
    )


def test_per_document_assets_are_partitioned_by_document(defs):
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        name = key.to_user_string()
        partitions = graph.get(key).partitions_def
        if name in PARTITIONED_ASSETS:
            assert partitions is not None and partitions.name == DOCUMENTS, name
        else:
            assert partitions is None, name


def test_cross_document_assets_have_an_automation_condition(defs):
    specs = {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}
    for name in CORPUS_ASSETS + HWKG_CORPUS_ASSETS:
        assert specs[name].automation_condition is not None, name


def _checks_by_asset(defs: Definitions) -> dict[str, set[str]]:
    checks: dict[str, set[str]] = {}
    for check_key in defs.resolve_asset_graph().asset_check_keys:
        checks.setdefault(check_key.asset_key.to_user_string(), set()).add(check_key.name)
    return checks


def test_declared_checks(defs):
    checks = _checks_by_asset(defs)
    for name in ("parsed_documents", "typed_artifacts", "chunks", "occurrences"):
        assert checks[name] == {"structurally_valid", "great_expectations_suite"}, name
    assert checks["chunk_embeddings"] == {"vectors_valid"}
    assert checks["chunk_index"] == {"index_matches_chunks"}
    assert checks["unit_embeddings"] == {"every_unit_has_a_vector"}
    assert checks["unit_hyperedges"] == {"no_invalid_retained_units", "great_expectations_suite"}
    assert checks["unit_nodes"] == {"great_expectations_suite"}
    assert checks["unit_rejections"] == {"every_rejection_has_a_rule"}
    assert set(checks) <= ALL_ASSETS


def test_all_checks_are_blocking(defs):
    graph = defs.resolve_asset_graph()
    for check_key in graph.asset_check_keys:
        assert graph.get_check_spec(check_key).blocking, check_key.to_user_string()


def test_assets_without_checks_are_only_the_known_gap(defs):
    """Guards the gap from growing while the xfail below documents it."""
    unchecked = ALL_ASSETS - set(_checks_by_asset(defs))
    assert unchecked <= ASSETS_WITHOUT_CHECKS_TODAY


def test_every_asset_has_at_least_one_check(defs):
    checks = _checks_by_asset(defs)
    assert sorted(ALL_ASSETS - set(checks)) == []


def test_jobs(defs):
    repo = defs.get_repository_def()
    names = {job.name for job in repo.get_all_jobs()}
    assert names - {"__ASSET_JOB"} == JOBS
    doc_job = defs.resolve_job_def("index_document")
    assert doc_job.partitions_def is not None and doc_job.partitions_def.name == DOCUMENTS
    assert _user_keys(doc_job.asset_layer.executable_asset_keys) == set(PARTITIONED_ASSETS)
    corpus_job = defs.resolve_job_def("assemble_corpus")
    assert corpus_job.partitions_def is None
    assert _user_keys(corpus_job.asset_layer.executable_asset_keys) == set(CORPUS_ASSETS + HWKG_CORPUS_ASSETS)
    build_job = defs.resolve_job_def("build_index")
    assert build_job.partitions_def is not None and build_job.partitions_def.name == DOCUMENTS
    assert _user_keys(build_job.asset_layer.executable_asset_keys) == (
        set(PARTITIONED_ASSETS) | set(CORPUS_ASSETS + HWKG_CORPUS_ASSETS))


def test_per_document_assets_build_many_documents_in_one_run(defs):
    """BackfillPolicy.single_run: a backfill of N partitions is one run, not N; every
    per-document asset has a code version (what change detection compares)."""
    graph = defs.resolve_asset_graph()
    for name in PARTITIONED_ASSETS:
        node = graph.get(AssetKey(name))
        policy = node.backfill_policy
        assert policy is not None and policy.max_partitions_per_run is None, name
        assert node.code_version, name


def test_sensors_and_schedule(defs):
    repo = defs.get_repository_def()
    assert {s.name for s in repo.sensor_defs} == SENSORS
    assert {s.name for s in repo.schedule_defs} == SCHEDULES
    corpus = defs.resolve_sensor_def("corpus_sensor")
    assert {j.name for j in corpus.jobs} == {"build_index", "assemble_corpus"}
    assert corpus.minimum_interval_seconds == 60
    automation = defs.resolve_sensor_def("corpus_automation_sensor")
    assert isinstance(automation, AutomationConditionSensorDefinition)
    nightly = defs.resolve_schedule_def("nightly_refresh")
    assert nightly.cron_schedule == "0 2 * * *"
    assert nightly.execution_timezone == "UTC"
    assert nightly.job_name == "build_index"
    failed = defs.resolve_sensor_def("failed_documents_sensor")
    assert {j.name for j in failed.jobs} == {"index_document"}


def test_resources(defs):
    assert {"settings", "llm", "io_manager"} <= set(defs.resources)


def test_every_llm_calling_asset_is_in_the_llm_pool(defs):
    """The instance's `llm` pool (dagster.yaml) bounds LLM calls across runs only for assets
    that declare it: every asset that asks for the `llm` resource must."""
    llm_assets = {}
    for assets_def in defs.resolve_asset_graph().assets_defs:
        if assets_def.is_executable and "llm" in assets_def.required_resource_keys:
            llm_assets[assets_def.op.name] = assets_def.op.pool
    assert {"typed_artifacts", "elements", "training_pairs", "chip_kg"} <= set(llm_assets)
    assert {name: pool for name, pool in llm_assets.items() if pool != "llm"} == {}
