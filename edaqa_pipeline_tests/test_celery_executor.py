"""Scale-out by configuration: the per-document assets built by real dagster-celery workers.

Nothing here is a mock: a Debian ``redis-server`` (the Celery broker and result backend) and a
``dagster-celery worker`` (two worker processes) run on 127.0.0.1 as subprocesses; the runs are
started with the plain ``dagster job execute -m edaqa_pipeline.definitions`` command, the same
code location that ``dagster dev`` loads, switched to Celery only by ``EDAQA_EXECUTOR=celery``
and ``EDAQA_CELERY_BROKER``. Celery needs a persistent instance (the workers write step events
through its InstanceRef), so DAGSTER_HOME is a tmp folder with SQLite storage.

Both document partitions run at the same time (two runs, steps spread over the two worker
processes); their stored tables must hash exactly like an in-process build of the same corpus
(``storage.hashing.content_hash``; the reference is the session's ``sample_index`` build,
which ``edaqa index`` runs with the in-process executor), and every step must have run in a
Celery worker.

Versions: dagster-celery 0.29.27 is the newest on the registry and pins dagster==1.13.27;
``make setup-dev`` installs it with ``--no-deps`` next to dagster 1.13.28 (same 1.13 line; this
test is what shows the pairing works). Processes are started with their signals reset and
stopped by process group in ``finally``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import polars as pl
import pytest

from edaqa_pipeline.jobs import DOCUMENT_ASSETS as JOB_ASSETS  # every asset of index_document
from edaqa_pipeline_tests.dagster_fixtures import (
    DOCUMENT_ASSETS,
    REPO,
    VENV_BIN,
    copy_sample,
    free_port,
    reset_signals,
    stop_process_group,
    subprocess_env,
    write_dagster_home,
)

DOCUMENTS = ["cts.md", "pdn.md"]
READY_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 240.0


# --- executor_from_env: the mapping, without any server ------------------------------------


def test_executor_by_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    from edaqa_pipeline.definitions import executor_from_env

    expected = {"in_process": "in_process", "multiprocess": "multiprocess", "celery": "celery"}
    for value, name in expected.items():
        monkeypatch.setenv("EDAQA_EXECUTOR", value)
        assert executor_from_env().name == name
    monkeypatch.setenv("EDAQA_EXECUTOR", "spark")
    with pytest.raises(ValueError, match="in_process, multiprocess, celery, k8s"):
        executor_from_env()


def test_k8s_executor_names_the_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from edaqa_pipeline.definitions import executor_from_env

    monkeypatch.setenv("EDAQA_EXECUTOR", "k8s")
    if importlib.util.find_spec("dagster_k8s") is not None:
        assert executor_from_env().name == "k8s"
        return
    with pytest.raises(ImportError, match="EDAQA_EXECUTOR=k8s needs the dagster-k8s package"):
        executor_from_env()


# --- the real thing: redis-server + dagster-celery workers -----------------------------------


def _start(args: list[str], log: Path, env: dict[str, str] | None = None,
           cwd: Path | None = None) -> subprocess.Popen[bytes]:  # fmt: skip
    with log.open("wb") as out:
        return subprocess.Popen(
            args, cwd=cwd or REPO, env=env, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, preexec_fn=reset_signals, start_new_session=True,
        )  # fmt: skip


def _wait(predicate, what: str, proc: subprocess.Popen[bytes], log: Path) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if predicate():
                return
        except Exception:  # not up yet
            pass
        time.sleep(0.3)
    pytest.fail(f"{what} not ready after {READY_TIMEOUT_S:.0f} s:\n{log.read_text()[-4000:]}")


@pytest.fixture()
def redis_url(tmp_path: Path):  # type: ignore[no-untyped-def]
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server is missing: `make setup-dev` installs Debian's redis-server")
    import redis

    port = free_port()
    log = tmp_path / "redis.log"
    proc = _start([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--protected-mode", "yes", "--dir", str(tmp_path)],
                  log)  # fmt: skip
    try:
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2)
        _wait(client.ping, "redis-server", proc, log)
        client.close()
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop_process_group(proc)


def _table_hashes(storage: Path) -> dict[str, str]:
    """content_hash of every stored per-document table of DOCUMENTS (all assets of the job)."""
    from edaqa_pipeline.storage.hashing import content_hash

    hashes = {}
    for asset in JOB_ASSETS:
        for key in DOCUMENTS:
            path = storage / "tables" / asset / f"{key}.parquet"
            if path.is_file():
                hashes[f"{asset}/{key}"] = content_hash(pl.read_parquet(path))
    for asset in DOCUMENT_ASSETS:  # the core per-document assets always store a table
        assert all(f"{asset}/{key}" in hashes for key in DOCUMENTS), (asset, storage)
    return hashes


@pytest.mark.slow
def test_celery_workers_build_the_same_tables_as_in_process(sample_index, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                            redis_url: str):
    started = time.monotonic()
    corpus = copy_sample(tmp_path / "corpus", DOCUMENTS)
    storage = tmp_path / "storage_celery"
    home = write_dagster_home(tmp_path / "dagster_home")
    env = subprocess_env(
        storage, home, EDAQA_CORPUS=str(corpus), EDAQA_EXECUTOR="celery",
        EDAQA_CELERY_BROKER=redis_url, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    )  # fmt: skip
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("documents", DOCUMENTS)
    # Both runs may create the LanceDB tables at once: lance_store._table creates with
    # exist_ok (test_lance_concurrency races four processes on it).

    # The worker: dagster-celery's own CLI (it writes the broker/backend into a config module
    # under DAGSTER_HOME and execs `celery -A dagster_celery.app worker`).
    celery_yaml = tmp_path / "celery.yaml"
    celery_yaml.write_text(json.dumps({"execution": {"config": {"broker": redis_url,
                                                                "backend": redis_url}}}))
    worker_log = tmp_path / "worker.log"
    worker = _start([str(VENV_BIN / "dagster-celery"), "worker", "start", "-A",
                     "dagster_celery.app", "-y", str(celery_yaml), "-n", "edaqa-test",
                     "-l", "INFO", "--", "--concurrency=2"],
                    worker_log, env=env, cwd=tmp_path)  # fmt: skip
    runs: list[subprocess.Popen[bytes]] = []
    try:
        from celery import Celery

        probe = Celery(broker=redis_url, backend=redis_url)
        _wait(lambda: probe.control.ping(timeout=1.0), "dagster-celery worker", worker, worker_log)
        ready_s = time.monotonic() - started

        # Both partitions at once, each a run of the unchanged code location.
        for key in DOCUMENTS:
            runs.append(_start(
                [str(VENV_BIN / "dagster"), "job", "execute", "-m", "edaqa_pipeline.definitions",
                 "-a", "defs", "-j", "index_document", "--tags",
                 json.dumps({"dagster/partition": key})],
                tmp_path / f"run_{key}.log", env=env,
            ))  # fmt: skip
        for key, proc in zip(DOCUMENTS, runs, strict=True):
            try:
                proc.wait(timeout=RUN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"run of {key} still going after {RUN_TIMEOUT_S:.0f} s:\n"
                            f"{worker_log.read_text()[-4000:]}")  # fmt: skip
            log = (tmp_path / f"run_{key}.log").read_text()
            assert proc.returncode == 0, f"{key}:\n{log[-4000:]}\nworker:\n{worker_log.read_text()[-4000:]}"
        celery_s = time.monotonic() - started
    finally:
        for proc in runs:
            stop_process_group(proc)
        stop_process_group(worker, grace_s=15.0)

    # Every step of both runs ran in a Celery worker, and both runs succeeded.
    from dagster import DagsterEventType, DagsterRunStatus

    with DagsterInstance.from_config(str(home)) as instance:
        dagster_runs = instance.get_runs()
        assert sorted(r.tags.get("dagster/partition") for r in dagster_runs) == DOCUMENTS
        for run in dagster_runs:
            assert run.status == DagsterRunStatus.SUCCESS, run.run_id
            records = instance.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT)
            in_worker = {
                r.dagster_event.step_key for r in records
                if r.dagster_event is not None and "in celery worker" in (r.dagster_event.message or "")
            }  # fmt: skip
            assert in_worker == set(JOB_ASSETS), in_worker

    # Identical tables: content hash of every per-document Parquet file, against the session's
    # in-process build of the sample corpus (per-document tables depend only on the document).
    _, reference, report = sample_index
    assert set(DOCUMENTS) <= set(report.documents)
    celery_hashes = _table_hashes(storage)
    assert celery_hashes == _table_hashes(reference)
    assert len(celery_hashes) >= len(DOCUMENT_ASSETS) * len(DOCUMENTS)
    print(json.dumps({"worker_ready_s": round(ready_s, 1), "celery_total_s": round(celery_s, 1)}))
