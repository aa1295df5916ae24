"""Security basics: document keys stay inside the corpus root; API keys are never written.

Keys (test_bad_inputs covers the scanner on a whole corpus and ``resolve_key``): here
``document_key`` itself, a symlinked folder, and the Dagster layer, where a partition key is
free text (the UI's launch dialog has "Add partition"): a key with ``..`` must fail its run
with a clear error and must not touch any file outside the partition folders.

API keys: the key is set to a sentinel in EDAQA_LLM_API_KEY and OPENAI_API_KEY, then

* ``edaqa index`` runs as a subprocess on two sample manuals, once configured offline and once
  against a loopback server that answers every call with HTTP 401 and echoes the
  ``Authorization`` header back in its error text (worst case: the key comes back inside the
  exception the client sees); the LLM calls fail and fall back to the offline rules;
* an in-process run with the LLM on a dead loopback port and no fallback, so the exception
  reaches Dagster;

and everything each run wrote (tables, manifest, LanceDB, LLM cache, the Dagster instance's
SQLite event logs and compute logs), Parquet and LanceDB rows decoded, every stored event
serialised, and the captured stdout/stderr are searched for the sentinel: zero hits.
Nothing here talks to anything but 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from edaqa_pipeline.corpus.scan import UnsafePathError, document_key, resolve_key, scan_corpus
from edaqa_pipeline_tests.dagster_fixtures import (
    DOCUMENT_ASSETS,
    REPO,
    VENV_BIN,
    copy_sample,
    free_port,
    make_settings,
    offline_environment,
    subprocess_env,
)

SENTINEL = "sk-edaqa-SENTINEL-4242-do-not-log"
NEEDLE = "SENTINEL-4242"  # also matches a key shown with its prefix masked
DOCUMENTS = ["cts.md", "pdn.md"]
KEY_VARS = ("EDAQA_LLM_API_KEY", "OPENAI_API_KEY")


# --- document keys -------------------------------------------------------------------------


def test_document_key_refuses_dotdot_in_a_name(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    (root / "docs").mkdir(parents=True)
    with pytest.raises(UnsafePathError, match=r"'\.\.' in a document path is not allowed"):
        document_key(root, root / "docs" / ".." / ".." / "secret.md")
    assert document_key(root, root / "docs" / "ok.md") == "docs/ok.md"


def test_document_key_refuses_a_symlink_leading_outside(tmp_path: Path) -> None:
    root, outside = tmp_path / "corpus", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n")
    (root / "escape.md").symlink_to(outside / "secret.md")
    with pytest.raises(UnsafePathError, match="outside the corpus root"):
        document_key(root, root / "escape.md")


def test_a_symlinked_folder_leading_outside_is_never_scanned(tmp_path: Path) -> None:
    root, outside = tmp_path / "corpus", tmp_path / "outside"
    root.mkdir()
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "secret.md").write_text("# Secret\n")
    (root / "ok.md").write_text("# Fine\n\nText.\n")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    scan = scan_corpus(root)
    files, refused = scan.files, scan.refused
    assert [f.key for f in files] == ["ok.md"]
    for name, reason in refused:  # walked or not, never indexed; if walked, refused clearly
        assert name.startswith("linked/") and "outside the corpus root" in reason
    with pytest.raises(UnsafePathError):
        resolve_key(root, "linked/deep/secret.md")


def _partition_run(tmp_path: Path, key: str) -> tuple[Any, Path]:
    """Materialise the per-document job for partition ``key`` in a corpus under tmp_path."""
    from dagster import DagsterInstance, in_process_executor

    from edaqa_pipeline.definitions import build_definitions

    corpus = tmp_path / "corpus"
    if not corpus.exists():
        copy_sample(corpus, ["cts.md"])
    storage = tmp_path / "storage"
    tables = storage / "tables"
    for asset in DOCUMENT_ASSETS:  # as after any earlier successful index
        (tables / asset).mkdir(parents=True, exist_ok=True)
    with offline_environment():
        defs = build_definitions(make_settings(corpus, storage), executor=in_process_executor)
        with DagsterInstance.ephemeral() as instance:
            instance.add_dynamic_partitions("documents", [key])
            result = defs.resolve_job_def("index_document").execute_in_process(
                partition_key=key, instance=instance, raise_on_error=False
            )
    return result, storage


def _failure_descriptions(result: Any) -> list[str]:
    return [
        event.event_specific_data.user_failure_data.description
        for event in result.all_events
        if event.event_type_value == "STEP_FAILURE"
        and event.event_specific_data.user_failure_data is not None
    ]


def test_a_dotdot_partition_key_fails_its_run_with_a_clear_error(tmp_path: Path) -> None:
    key = "../../outside"
    result, storage = _partition_run(tmp_path, key)
    assert not result.success
    assert _failure_descriptions(result) == [
        f"{key}: '..' or an absolute path is not a valid document key"
    ]
    written = sorted(p.relative_to(storage).as_posix() for p in storage.rglob("*.parquet"))
    assert written == [], written


def test_a_dotdot_partition_key_deletes_nothing_outside_its_partition(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    victims = [storage / "tables" / "chunk_index.parquet", storage / "victim.parquet"]
    for victim in victims:
        victim.parent.mkdir(parents=True, exist_ok=True)
        victim.write_bytes(b"not yours")
    for key in ("../chunk_index", "../../victim"):
        result, _ = _partition_run(tmp_path, key)
        assert not result.success
    survivors = [v for v in victims if v.exists()]
    assert survivors == victims


# --- API keys never written ----------------------------------------------------------------


class _EchoKey401(BaseHTTPRequestHandler):
    """An OpenAI-style endpoint that rejects every call, quoting the key it was sent."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        auth = self.headers.get("Authorization", "")
        self.server.auth_headers.append(auth)  # type: ignore[attr-defined]
        body = json.dumps({"error": {
            "message": f"Incorrect API key provided: {auth.removeprefix('Bearer ')}",
            "type": "invalid_request_error", "code": "invalid_api_key",
        }}).encode()  # fmt: skip
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture()
def echo_401() -> Iterator[tuple[str, list[str]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoKey401)
    server.auth_headers = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", server.auth_headers  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def _decoded(path: Path) -> str:
    """A readable rendering of a file, decoding the formats that may compress strings."""
    if path.suffix == ".parquet":
        return json.dumps(pl.read_parquet(path).to_dicts(), default=str)
    return path.read_bytes().decode("utf-8", errors="replace")


def _lance_rows(uri: Path) -> str:
    if not uri.is_dir():
        return ""
    import lancedb

    db = lancedb.connect(str(uri))
    listed = db.list_tables()
    names = listed.tables if hasattr(listed, "tables") else listed
    return json.dumps([db.open_table(n).to_arrow().drop_columns(["vector"]).to_pylist()
                       for n in names], default=str)  # fmt: skip


def _stored_events(home: Path) -> str:
    """Every event of every run in the Dagster instance at ``home``, serialised."""
    from dagster import DagsterInstance
    from dagster._serdes import serialize_value

    if not (home / "dagster.yaml").is_file():
        return ""
    with DagsterInstance.from_config(str(home)) as instance:
        return "\n".join(
            serialize_value(record) for run in instance.get_runs()
            for record in instance.all_logs(run.run_id)
        )  # fmt: skip


def _hits(root: Path, *texts: str) -> list[str]:
    """Where the sentinel appears: files under ``root`` (raw and decoded), LanceDB rows, stored
    events, and the given texts."""
    hits = []
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files, f"nothing written under {root}"
    for path in files:
        if NEEDLE.encode() in path.read_bytes() or NEEDLE in _decoded(path):
            hits.append(str(path.relative_to(root)))
    if NEEDLE in _lance_rows(root / "lancedb"):
        hits.append("lancedb rows")
    if NEEDLE in _stored_events(root / "dagster_home"):
        hits.append("dagster events")
    hits += [f"text #{i}" for i, text in enumerate(texts) if NEEDLE in text]
    return hits


def _typed_artifacts_metadata(storage: Path) -> list[dict[str, Any]]:
    from dagster import AssetKey, DagsterInstance

    with DagsterInstance.from_config(str(storage / "dagster_home")) as instance:
        records = instance.fetch_materializations(AssetKey("typed_artifacts"), limit=10).records
        return [{k: getattr(v, "value", v) for k, v in r.asset_materialization.metadata.items()}
                for r in records]  # fmt: skip


def _edaqa_index(tmp_path: Path, **llm_env: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    corpus = copy_sample(tmp_path / "corpus", DOCUMENTS)
    storage = tmp_path / "storage"
    env = subprocess_env(storage, **{name: SENTINEL for name in KEY_VARS}, **llm_env)
    env.pop("DAGSTER_HOME", None)  # edaqa index uses STORAGE/dagster_home
    proc = subprocess.run(
        [str(VENV_BIN / "edaqa"), "index", "--corpus", str(corpus), "--storage", str(storage)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert json.loads((storage / "manifest.json").read_text())["documents"] == DOCUMENTS
    return proc, storage


def test_provider_offline_from_the_environment_wins_over_a_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from edaqa_pipeline.resources import LLMResource

    for name in KEY_VARS:
        monkeypatch.setenv(name, SENTINEL)
    monkeypatch.setenv("EDAQA_LLM_PROVIDER", "offline")
    assert LLMResource().get_client().provider == "offline"


@pytest.mark.slow
def test_api_key_is_never_written_by_an_offline_index(tmp_path: Path, echo_401) -> None:
    base_url, auth = echo_401
    # The loopback server is only a tripwire: an offline run sends nothing anywhere, but if
    # the provider choice were ignored, calls go to 127.0.0.1, never to a hosted API.
    proc, storage = _edaqa_index(tmp_path, EDAQA_LLM_PROVIDER="offline",
                                 EDAQA_LLM_BASE_URL=base_url, EDAQA_LLM_MODEL="tripwire")  # fmt: skip
    hits = _hits(storage, proc.stdout, proc.stderr)
    assert auth == [], f"{len(auth)} LLM calls reached the tripwire of an offline run"
    assert hits == []


@pytest.mark.slow
def test_api_key_is_never_written_when_llm_calls_fail(tmp_path: Path, echo_401) -> None:
    base_url, auth = echo_401
    proc, storage = _edaqa_index(tmp_path, EDAQA_LLM_PROVIDER="openai",
                                 EDAQA_LLM_BASE_URL=base_url, EDAQA_LLM_MODEL="rejected")  # fmt: skip
    # The key really was in play: sent with every call and quoted back in every error ...
    assert auth and set(auth) == {f"Bearer {SENTINEL}"}
    metadata = _typed_artifacts_metadata(storage)
    assert len(metadata) == len(DOCUMENTS)
    for entry in metadata:
        assert entry["llm_provider"] == "openai"
        assert entry["llm_errors"] > 0 and entry["llm_fallbacks"] > 0, entry
    # ... and written nowhere.
    assert _hits(storage, proc.stdout, proc.stderr) == []


def _materialise_with_llm(corpus: Path, storage: Path, llm: Any, instance: Any,
                          raise_on_error: bool = False) -> Any:  # fmt: skip
    """parsed_documents + typed_artifacts of cts.md with the given LLM resource."""
    from dagster import materialize

    from edaqa_pipeline.assets.documents import parsed_documents, typed_artifacts
    from edaqa_pipeline.assets.io_manager import CorpusParquetIOManager
    from edaqa_pipeline_tests.dagster_fixtures import pipeline_settings

    cfg = make_settings(corpus, storage)
    resources = {"settings": pipeline_settings(cfg), "llm": llm,
                 "io_manager": CorpusParquetIOManager(base_dir=str(cfg.tables_dir))}  # fmt: skip
    return materialize([parsed_documents, typed_artifacts], partition_key="cts.md",
                       instance=instance, resources=resources, raise_on_error=raise_on_error)  # fmt: skip


@pytest.mark.parametrize("server", ["dead_port", "echo_401"])
def test_api_key_is_not_in_the_exception_of_a_failed_llm_asset(
    tmp_path: Path, server: str, request: pytest.FixtureRequest
) -> None:
    """No fallback: the LLM error (connection refused on a dead loopback port, or a 401 that
    quotes the key) fails the run; neither the stored failure nor the raised exception (nor
    anything else written) carries the key."""
    from dagster import DagsterInstance

    from edaqa_pipeline.resources import LLMResource

    corpus = copy_sample(tmp_path / "corpus", ["cts.md"])
    storage = tmp_path / "storage"
    home = storage / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    if server == "dead_port":
        base_url, expected = f"http://127.0.0.1:{free_port()}/v1", "Connection refused"
    else:
        base_url, expected = request.getfixturevalue("echo_401")[0], "Incorrect API key provided"
    llm = LLMResource(provider="openai", base_url=base_url, model="m",
                      cache_dir=str(storage / "llm_cache"), fallback_offline=False,
                      max_retries=0, timeout_s=5)  # fmt: skip
    with offline_environment() as env:
        for name in KEY_VARS:
            env.setenv(name, SENTINEL)
        with DagsterInstance.from_config(str(home)) as instance:
            instance.add_dynamic_partitions("documents", ["cts.md"])
            result = _materialise_with_llm(corpus, storage, llm, instance)
            failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
            assert [e.step_key for e in failures] == ["typed_artifacts"]
            error, rendered = failures[0].event_specific_data.error, []
            while error is not None:
                rendered.append(error.to_string())
                error = error.cause
            assert expected in "".join(rendered), rendered
            with pytest.raises(Exception) as raised:
                _materialise_with_llm(corpus, storage, llm, instance, raise_on_error=True)
    texts = [*rendered, str(raised.value), str(raised.getrepr(style="long"))]
    assert _hits(storage, *texts) == []
