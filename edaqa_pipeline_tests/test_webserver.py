"""The real dagster-webserver loads the code location and serves every asset, check, job,
sensor and schedule over GraphQL (what a user sees in the UI).

The server runs from .venv/bin with the repo's workspace.yaml (as ``make dev`` does) on a free
127.0.0.1 port with DAGSTER_HOME and EDAQA_STORAGE in
tmp; its signals are reset in the child (this environment can hand children ignored
SIGINT/SIGTERM) and it is stopped by its process group in a finally block.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from edaqa_pipeline_tests.dagster_fixtures import (
    ALL_ASSETS,
    JOBS,
    PARTITIONED_ASSETS,
    REPO,
    SCHEDULES,
    SENSORS,
    VENV_BIN,
    free_port,
    make_settings,
    reset_signals,
    stop_process_group,
    subprocess_env,
    write_corpus,
    write_dagster_home,
)

pytestmark = pytest.mark.slow

READY_TIMEOUT_S = 90.0

REPOSITORY_QUERY = """
query Repositories {
  repositoriesOrError {
    __typename
    ... on RepositoryConnection {
      nodes {
        name
        location { name }
        jobs { name }
        sensors { name sensorType }
        schedules { name cronSchedule executionTimezone }
        assetNodes {
          assetKey { path }
          groupName
          kinds
          isPartitioned
          hasAssetChecks
          assetChecksOrError {
            __typename
            ... on AssetChecks { checks { name blocking } }
          }
        }
      }
    }
    ... on PythonError { message }
  }
}
"""

LOCATION_QUERY = """
query Locations {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on PythonError { message }
        }
      }
    }
  }
}
"""


def _get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status, response.read()


def _graphql(base: str, query: str) -> dict[str, Any]:
    body = json.dumps({"query": query}).encode()
    request = urllib.request.Request(
        f"{base}/graphql", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        payload = json.loads(response.read())
    assert "errors" not in payload, payload["errors"]
    return payload["data"]


def _wait_ready(proc: subprocess.Popen[bytes], base: str, log: Path) -> dict[str, Any]:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"webserver exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            status, body = _get(f"{base}/server_info")
            if status == 200:
                return json.loads(body)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    pytest.fail(f"webserver not ready after {READY_TIMEOUT_S:.0f} s:\n{log.read_text()[-4000:]}")


def _wait_location_loaded(base: str) -> list[dict[str, Any]]:
    """The code location loads in a subprocess; wait until it is LOADED (or fails)."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    entries: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        entries = _graphql(base, LOCATION_QUERY)["workspaceOrError"]["locationEntries"]
        if entries and all(e["loadStatus"] == "LOADED" for e in entries):
            return entries
        time.sleep(0.5)
    pytest.fail(f"code location not loaded after {READY_TIMEOUT_S:.0f} s: {entries}")


@pytest.fixture(scope="module")
def webserver(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("webserver")
    home = write_dagster_home(root / "dagster_home")
    corpus = write_corpus(root / "corpus", {"a.md": "# A\n\nSome text.\n"})
    env = subprocess_env(root / "storage", home, EDAQA_CORPUS=str(corpus))
    port = free_port()
    log = root / "webserver.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(VENV_BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port),
             "-w", "workspace.yaml"],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            preexec_fn=reset_signals, start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        info = _wait_ready(proc, base, log)
        entries = _wait_location_loaded(base)
        yield {"base": base, "info": info, "entries": entries, "storage": root / "storage",
               "log": log, "proc": proc}  # fmt: skip
    finally:
        stop_process_group(proc)


@pytest.fixture(scope="module")
def local_defs(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The same definitions built in this process (what the server should be serving)."""
    from dagster import in_process_executor

    from edaqa_pipeline.definitions import build_definitions

    root = tmp_path_factory.mktemp("local_defs")
    return build_definitions(make_settings(root, root / "storage"), executor=in_process_executor)


@pytest.fixture(scope="module")
def defs_specs(local_defs):  # type: ignore[no-untyped-def]
    return {s.key.to_user_string(): s for s in local_defs.resolve_all_asset_specs()}


@pytest.fixture(scope="module")
def repository(webserver) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    data = _graphql(webserver["base"], REPOSITORY_QUERY)["repositoriesOrError"]
    assert data["__typename"] == "RepositoryConnection", data
    (repo,) = data["nodes"]
    return repo


def test_server_info_answers(webserver):
    import dagster

    assert webserver["info"]["dagster_version"] == dagster.__version__


def test_code_location_loaded_without_error(webserver):
    (entry,) = webserver["entries"]
    assert entry["name"] == "edaqa_pipeline"  # location_name in workspace.yaml
    assert entry["locationOrLoadError"]["__typename"] == "RepositoryLocation"


def test_every_asset_is_served(repository):
    keys = {"/".join(node["assetKey"]["path"]) for node in repository["assetNodes"]}
    assert keys == ALL_ASSETS


def test_assets_have_groups_kinds_and_partitions(repository, defs_specs):
    for node in repository["assetNodes"]:
        name = "/".join(node["assetKey"]["path"])
        spec = defs_specs[name]
        assert node["groupName"] == spec.group_name and spec.group_name != "default", name
        assert set(node["kinds"]) == set(spec.kinds) and node["kinds"], name
    partitioned = {
        "/".join(n["assetKey"]["path"]) for n in repository["assetNodes"] if n["isPartitioned"]
    }
    assert partitioned == set(PARTITIONED_ASSETS)


def test_every_declared_check_is_served(repository, local_defs):
    declared = {k.to_user_string() for k in local_defs.resolve_asset_graph().asset_check_keys}
    served: set[str] = set()
    for node in repository["assetNodes"]:
        name = "/".join(node["assetKey"]["path"])
        checks = node["assetChecksOrError"]
        assert checks["__typename"] == "AssetChecks", checks
        names = {c["name"] for c in checks["checks"]}
        assert node["hasAssetChecks"] == bool(names), name
        assert all(c["blocking"] for c in checks["checks"]), name
        served |= {f"{name}:{c}" for c in names}
    assert served == declared
    assert len(served) >= 15


def test_jobs_sensors_and_schedule_are_served(repository):
    assert {j["name"] for j in repository["jobs"]} - {"__ASSET_JOB"} == JOBS
    sensors = {s["name"]: s["sensorType"] for s in repository["sensors"]}
    assert set(sensors) == SENSORS
    assert sensors["corpus_automation_sensor"] in {"AUTOMATION", "AUTO_MATERIALIZE"}
    assert sensors["corpus_sensor"] == "STANDARD"
    schedules = {s["name"]: s for s in repository["schedules"]}
    assert set(schedules) == SCHEDULES
    assert schedules["nightly_refresh"]["cronSchedule"] == "0 2 * * *"
    assert schedules["nightly_refresh"]["executionTimezone"] == "UTC"


def test_loading_the_location_writes_no_pipeline_storage(webserver):
    """Serving definitions must not create tables or LanceDB (in tmp, and so not in the repo)."""
    storage = webserver["storage"]
    assert not (storage / "tables").exists()
    assert not (storage / "lancedb").exists()
