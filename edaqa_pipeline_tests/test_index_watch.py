"""``edaqa index --watch``: the process stays after the first build and re-indexes what changed
in the corpus, until Ctrl-C or ``kill``. Run for real: the CLI in a child process, a file edited
on disk, the re-index read back from the storage root, SIGINT or SIGTERM to stop it (by PID)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from edaqa_pipeline.storage.tables import read_partitions
from edaqa_pipeline_tests.dagster_fixtures import reset_signals
from edaqa_pipeline_tests.fixtures_index import copy_corpus

pytestmark = pytest.mark.slow
ADDED = "Watching the corpus re-indexes this sentence."


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _wait_for(lines: queue.Queue[str], prefix: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line.startswith(prefix):
            return line
    raise AssertionError(f"no line starting {prefix!r} within {timeout} s")


def _index_command(corpus: Path, storage: Path) -> list[str]:
    return [sys.executable, "-m", "edaqa_pipeline.cli", "index", "--corpus", str(corpus), "--storage",
            str(storage), "--quiet"]


def _as_background_job() -> None:
    """preexec_fn: SIGINT ignored, as a shell starts a background job (``cmd &``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def _watching(corpus: Path, storage: Path,
              signals: Callable[[], None]) -> Iterator[tuple[subprocess.Popen[str], queue.Queue[str]]]:
    """``edaqa index --watch 0.2`` in a child process and its stdout lines; ``signals`` sets the
    child's signal dispositions as its launcher would (what a pytest run inherits varies: a
    background ``make test`` ignores SIGINT). Killed by process group on the way out."""
    proc = subprocess.Popen([*_index_command(corpus, storage), "--watch", "0.2"],
                            env=dict(os.environ, HF_HUB_OFFLINE="1"), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True,
                            preexec_fn=signals)
    try:
        yield proc, _lines(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def _edit(corpus: Path) -> None:
    page = corpus / "pdn.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\n\n{ADDED}\n", encoding="utf-8")


def _stop(proc: subprocess.Popen[str], lines: queue.Queue[str], sig: signal.Signals) -> None:
    """Ctrl-C or ``kill`` by PID: the watcher says so and exits 0."""
    os.kill(proc.pid, sig)
    _wait_for(lines, "stopped watching", 60)
    assert proc.wait(timeout=60) == 0


def _added_is_indexed(storage: Path) -> bool:
    chunks = read_partitions(storage / "tables", "chunks", ["pdn.md"])
    return chunks is not None and any(ADDED in text for text in chunks["text"].to_list())


def test_watch_reindexes_an_edited_document_until_killed(tmp_path: Path) -> None:
    """Started as a background job (SIGINT ignored), stopped with ``kill`` (SIGTERM) after a
    re-index: Dagster's runs re-point SIGTERM at the ignored SIGINT handler, so without
    ``_stop_on_sigterm`` only SIGKILL would stop it."""
    corpus = copy_corpus(tmp_path / "corpus", ["floorplan.md", "pdn.md"])
    storage = tmp_path / "storage"
    with _watching(corpus, storage, _as_background_job) as (proc, lines):
        assert "indexed 2 documents" in _wait_for(lines, "indexed", 300)
        _wait_for(lines, "watching", 30)
        built = json.loads((storage / "manifest.json").read_text())
        _edit(corpus)
        assert _wait_for(lines, "re-indexed", 120).startswith("re-indexed 1 documents, removed 0, failed 0")
        assert _added_is_indexed(storage)
        again = json.loads((storage / "manifest.json").read_text())
        assert again["tables"]["chunks"]["content_hash"] != built["tables"]["chunks"]["content_hash"]
        assert again["tables"]["parsed_documents"]["rows"] > built["tables"]["parsed_documents"]["rows"]
        _stop(proc, lines, signal.SIGTERM)


def _steps_started(storage: Path, after: int) -> tuple[int, int]:
    """(runs of the storage root, steps started in the runs after its first ``after``)."""
    from dagster import DagsterEventType, DagsterInstance

    with DagsterInstance.from_config(str(storage / "dagster_home")) as instance:
        runs = sorted(instance.get_run_records(), key=lambda r: r.create_timestamp)
        return len(runs), sum(len(instance.all_logs(r.dagster_run.run_id, of_type=DagsterEventType.STEP_START))
                              for r in runs[after:])


def test_ctrl_c_during_a_reindex_stops_the_watch_cleanly_and_the_next_index_finishes(tmp_path: Path) -> None:
    """Ctrl-C while a re-index runs: Dagster turns it into an interrupted step; the watcher
    must stop with its line and status 0 (not a traceback, not watching on), and the next
    ``edaqa index`` must finish the interrupted work."""
    corpus = copy_corpus(tmp_path / "corpus", ["floorplan.md", "pdn.md"])
    storage = tmp_path / "storage"
    with _watching(corpus, storage, reset_signals) as (proc, lines):  # a terminal's Ctrl-C
        _wait_for(lines, "watching", 300)
        before, _ = _steps_started(storage, 0)
        _edit(corpus)
        deadline = time.monotonic() + 120
        while _steps_started(storage, before)[1] < 2:  # the re-index's run is inside a step
            assert time.monotonic() < deadline and proc.poll() is None, "no re-index started"
            time.sleep(0.05)
        _stop(proc, lines, signal.SIGINT)
    subprocess.run(_index_command(corpus, storage), env=dict(os.environ, HF_HUB_OFFLINE="1"), check=True,
                   stdout=subprocess.DEVNULL, timeout=600)
    assert _added_is_indexed(storage)
