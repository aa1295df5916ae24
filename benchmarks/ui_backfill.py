"""A UI backfill of every document against ``edaqa index`` of the same corpus.

    .venv/bin/python benchmarks/ui_backfill.py ../shared/corpus/openroad-2024 [--workdir DIR]
        [--executor in_process|multiprocess] [--mode backfill|ranged-run|job-backfill]

What a person does in the UI, through the same GraphQL API the UI calls: with ``dagster dev``
(webserver + daemon, the repo's ``workspace.yaml``, the storage root's instance) on a free
127.0.0.1 port, the document partitions registered (what the corpus sensor does first), one
``launchPartitionBackfill`` of the ``build_index`` selection (every per-document asset over
all partitions and the cross-document assets), then polling the backfill until it ends.

Measured in the same run, each on its own fresh storage root:

* ``edaqa index --corpus C --storage A --quiet`` (a child process): wall and CPU seconds;
* the backfill on root B: wall seconds from the launch to the backfill's terminal status, the
  runs it made, and whether its tables equal A's (``content_hash`` of every table).

The ratio backfill / index is the figure the project's target is set on (<= 1.2x). The daemon looks at backfills
every 30 s (``DEFAULT_DAEMON_INTERVAL_SECONDS``, a Dagster constant) and the corpus assets can
only be requested once the per-document run has finished, so a backfill carries at least one
daemon interval more than ``edaqa index``; the webserver's start-up is not counted.

``--mode ranged-run`` measures the other way the UI builds every partition: one run of the
``build_index`` job launched from its Launchpad (GraphQL ``launchRun``, what the Launchpad's
button sends) with the partition-range tags ``dagster/asset_partition_range_start`` / ``_end``
over all documents, the run the corpus sensor and ``edaqa index`` make. It goes through the
run queue (the daemon dequeues every 5 s) and the run launcher (a new process), not the
backfill daemon; wall seconds from the launch to the run's end.

``--mode job-backfill`` measures the third: the job's own backfill (*Jobs -> build_index ->
Partitions -> Launch backfill*, GraphQL ``launchPartitionBackfill`` with the job's partition set
and every document). With the per-document assets' ``BackfillPolicy.single_run()`` the daemon
submits one ranged run of the whole job (corpus assets included); wall seconds from the launch
to the end of the backfill and of every run it made, whichever is later.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TERMINAL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}

LAUNCH = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
    ... on UnauthorizedError { message }
  }
}
"""
LAUNCH_RUN = """
mutation LaunchRun($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on UnauthorizedError { message }
  }
}
"""
RUN_STATUS = """
query Run($id: ID!) {
  runOrError(runId: $id) { __typename ... on Run { status } ... on PythonError { message } }
}
"""
RUN_TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}
STATUS = """
query Backfill($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { status numPartitions }
    ... on PythonError { message }
  }
}
"""


def _graphql(base: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"{base}/graphql", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        payload = json.loads(response.read())
    if payload.get("errors"):
        raise RuntimeError(f"GraphQL errors: {payload['errors']}")
    return dict(payload["data"])


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _reset_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's own process group (its pgid is its pid), then SIGKILL."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def index_with_cli(corpus: Path, storage: Path) -> dict[str, Any]:
    started, cpu = time.perf_counter(), _children_cpu()
    subprocess.run([str(BIN / "edaqa"), "index", "--corpus", str(corpus), "--storage", str(storage),
                    "--quiet"], check=True, stdout=subprocess.DEVNULL)
    manifest = json.loads((storage / "manifest.json").read_text())
    return {"wall_s": time.perf_counter() - started, "cpu_s": _children_cpu() - cpu,
            "documents": manifest["documents"], "failed": [f["document"] for f in manifest["failed"]],
            "tables": {k: v["content_hash"] for k, v in manifest["tables"].items()}}


def _wait_ready(base: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"dagster dev exited:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError, RuntimeError):
            entries = _graphql(base, "{ workspaceOrError { ... on Workspace { locationEntries "
                                     "{ loadStatus } } } }")["workspaceOrError"]["locationEntries"]
            if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                return
        time.sleep(1.0)
    raise RuntimeError(f"dagster dev not ready after {timeout_s:.0f} s:\n{log.read_text()[-3000:]}")


def _asset_backfill(base: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> tuple[str, str]:
    """``launchPartitionBackfill`` of every asset over all partitions, polled to its end."""
    from edaqa_pipeline.jobs import CORPUS_ASSETS, DOCUMENT_ASSETS

    assets = [{"path": [name]} for name in (*DOCUMENT_ASSETS, *CORPUS_ASSETS)]
    launched = _graphql(base, LAUNCH, {"params": {"assetSelection": assets, "allPartitions": True,
                                                  "title": "benchmarks/ui_backfill.py"}})
    launched = launched["launchPartitionBackfill"]
    if launched["__typename"] != "LaunchBackfillSuccess":
        raise RuntimeError(f"backfill not launched: {launched}")
    backfill_id = launched["backfillId"]
    status = _poll(base, proc, log, f"backfill {backfill_id}", STATUS, {"id": backfill_id},
                   "partitionBackfillOrError", "PartitionBackfill", TERMINAL, 2.0, timeout_s)
    return backfill_id, status


def _poll(base: str, proc: subprocess.Popen[bytes], log: Path, what: str, query: str,
          variables: dict[str, Any], field: str, typename: str, terminal: set[str],
          every_s: float, timeout_s: float) -> str:
    """``query`` every ``every_s`` until the ``status`` of ``field`` is in ``terminal``."""
    status, deadline = "", time.monotonic() + timeout_s
    while status not in terminal:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} still {status or 'not started'} (server exited or "
                               f"{timeout_s:.0f} s passed):\n{log.read_text()[-3000:]}")
        time.sleep(every_s)
        state = _graphql(base, query, variables)[field]
        if state["__typename"] != typename:
            raise RuntimeError(f"{what}: {state}")
        status = state["status"]
    return status


def _ranged_run(base: str, proc: subprocess.Popen[bytes], log: Path, documents: list[str],
                timeout_s: float) -> tuple[str, str]:
    """The Launchpad's ``launchRun`` of ``build_index`` with the range tags over every
    document (``sensors.range_tags``, what the sensor's requests carry), polled to its end."""
    from edaqa_pipeline.assets.partitions import ISOLATE_FAILURES_TAG
    from edaqa_pipeline.sensors import range_tags

    tags = {**range_tags(documents, documents), ISOLATE_FAILURES_TAG: "1"}
    params = {"selector": {"repositoryLocationName": "edaqa_pipeline", "repositoryName": "__repository__",
                           "jobName": "build_index"},
              "runConfigData": {}, "mode": "default",
              "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in sorted(tags.items())]}}
    launched = _graphql(base, LAUNCH_RUN, {"params": params})["launchRun"]
    if launched["__typename"] != "LaunchRunSuccess":
        raise RuntimeError(f"run not launched: {launched}")
    run_id = launched["run"]["runId"]
    status = _poll(base, proc, log, f"run {run_id}", RUN_STATUS, {"id": run_id}, "runOrError", "Run",
                   RUN_TERMINAL, 0.5, timeout_s)
    return run_id, status


def _job_backfill(base: str, proc: subprocess.Popen[bytes], log: Path, documents: list[str],
                  home: Path, timeout_s: float) -> tuple[str, str, float]:
    """``launchPartitionBackfill`` of the ``build_index`` job's partition set over every
    document, polled until the backfill has ended; also returns the seconds from the launch
    to the end of the last run it made (the tables are written then; the daemon marks the
    backfill done on its next pass)."""
    from dagster import DagsterInstance, RunsFilter

    from edaqa_pipeline.assets.partitions import ISOLATE_FAILURES_TAG

    selector = {"partitionSetName": "build_index_partition_set",
                "repositorySelector": {"repositoryLocationName": "edaqa_pipeline",
                                       "repositoryName": "__repository__"}}
    started = time.perf_counter()
    launched = _graphql(base, LAUNCH, {"params": {
        "selector": selector, "partitionNames": documents, "title": "benchmarks/ui_backfill.py",
        "tags": [{"key": ISOLATE_FAILURES_TAG, "value": "1"}]}})["launchPartitionBackfill"]
    if launched["__typename"] != "LaunchBackfillSuccess":
        raise RuntimeError(f"backfill not launched: {launched}")
    backfill_id = launched["backfillId"]
    runs_done: float | None = None
    with DagsterInstance.from_config(str(home)) as instance:
        while runs_done is None:
            if proc.poll() is not None or time.perf_counter() - started > timeout_s:
                raise RuntimeError(f"backfill {backfill_id}: runs not done:\n{log.read_text()[-3000:]}")
            runs = instance.get_runs(RunsFilter(tags={"dagster/backfill": backfill_id}))
            if runs and all(r.is_finished for r in runs):
                runs_done = time.perf_counter() - started
            time.sleep(0.5)
    status = _poll(base, proc, log, f"backfill {backfill_id}", STATUS, {"id": backfill_id},
                   "partitionBackfillOrError", "PartitionBackfill", TERMINAL, 0.5, timeout_s)
    return backfill_id, status, runs_done


def backfill_with_ui(corpus: Path, storage: Path, documents: list[str], executor: str,
                     mode: str = "backfill", timeout_s: float = 3600.0) -> dict[str, Any]:
    from dagster import DagsterInstance, RunsFilter

    from edaqa_pipeline.cli.index import dagster_home
    from edaqa_pipeline.jobs import CORPUS_ASSETS, DOCUMENT_ASSETS
    from edaqa_pipeline.settings import settings_for
    from edaqa_pipeline.storage.manifest import table_summary

    home = dagster_home(storage)
    with DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("documents", documents)
    env = {**os.environ, "EDAQA_STORAGE": str(storage), "EDAQA_CORPUS": str(corpus),
           "DAGSTER_HOME": str(home), "EDAQA_EXECUTOR": executor, "PYTHONUNBUFFERED": "1"}
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = storage.parent / f"{storage.name}_dagster_dev.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(BIN / "dagster"), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1",
                                 "-p", str(port)], cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, preexec_fn=_reset_signals, start_new_session=True)
    try:
        _wait_ready(base, proc, log)
        started = time.perf_counter()
        runs_done_s = None
        if mode == "ranged-run":
            run_id, status = _ranged_run(base, proc, log, documents, timeout_s)
            filters = RunsFilter(run_ids=[run_id])
        elif mode == "job-backfill":
            backfill_id, status, runs_done_s = _job_backfill(base, proc, log, documents, home, timeout_s)
            filters = RunsFilter(tags={"dagster/backfill": backfill_id})
        else:
            backfill_id, status = _asset_backfill(base, proc, log, timeout_s)
            filters = RunsFilter(tags={"dagster/backfill": backfill_id})
        wall = time.perf_counter() - started
    finally:
        _stop(proc)
    with DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(filters)
        run_status = sorted(str(r.status.value) for r in runs)
    cfg = settings_for(corpus, storage)
    tables = table_summary(cfg.tables_dir, documents, DOCUMENT_ASSETS, CORPUS_ASSETS)
    return {"wall_s": wall, "runs_done_s": runs_done_s, "status": status, "runs": run_status,
            "tables": {k: v["content_hash"] for k, v in tables.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--executor", default="in_process", choices=("in_process", "multiprocess"),
                        help="EDAQA_EXECUTOR of the UI's runs (edaqa index runs in-process)")
    parser.add_argument("--mode", default="backfill", choices=("backfill", "ranged-run", "job-backfill"),
                        help="backfill: the asset backfill dialog; ranged-run: one build_index run "
                        "from the Launchpad with the partition-range tags; job-backfill: the "
                        "build_index job's backfill from its Partitions page")
    args = parser.parse_args()
    corpus = Path(args.corpus).resolve()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="edaqa_backfill_"))
    workdir.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    cli = index_with_cli(corpus, workdir / "cli")
    ui = backfill_with_ui(corpus, workdir / "ui", sorted(cli["documents"] + cli["failed"]), args.executor,
                          args.mode)
    # every table of the UI build against the CLI's (a table only one side has differs)
    same = {k: ui["tables"][k] == cli["tables"].get(k) for k in ui["tables"]}
    print(f"corpus               {corpus} ({len(cli['documents'])} documents, {len(cli['failed'])} failed)")
    print(f"load (1 min)         {load:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"edaqa index          {cli['wall_s']:.1f} s wall, {cli['cpu_s']:.1f} CPU-s")
    print(f"UI {args.mode:17s} {ui['wall_s']:.1f} s wall, status {ui['status']}, runs {ui['runs']} "
          f"(executor {args.executor})")
    print(f"backfill / index     {ui['wall_s'] / cli['wall_s']:.2f}x")
    if ui["runs_done_s"] is not None:
        print(f"runs ended after     {ui['runs_done_s']:.1f} s: {ui['runs_done_s'] / cli['wall_s']:.2f}x")
    print(f"tables equal         {sum(same.values())} of {len(same)}"
          + ("" if all(same.values()) else f": differ {sorted(k for k, v in same.items() if not v)}"))
    print(json.dumps({"index_wall_s": round(cli["wall_s"], 2), "index_cpu_s": round(cli["cpu_s"], 2),
                      "backfill_wall_s": round(ui["wall_s"], 2), "ratio": round(ui["wall_s"] / cli["wall_s"], 3),
                      "runs_done_s": ui["runs_done_s"] and round(ui["runs_done_s"], 2),
                      "runs": ui["runs"], "status": ui["status"], "tables_equal": all(same.values()),
                      "executor": args.executor, "mode": args.mode, "load_before": load}))


if __name__ == "__main__":
    main()
