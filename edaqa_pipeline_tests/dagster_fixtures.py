"""Helpers shared by the Dagster-layer tests (definitions, sensor/schedule, assets, webserver).

Plain functions and constants, imported explicitly by the test modules: tiny corpora written
into tmp folders, settings pointing every write at tmp, an environment without any LLM
endpoint (so ``LLMResource(provider="auto")`` stays offline), and process helpers for tests
that start a real server (signals reset in the child, stopped by PID / process group).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from edaqa_pipeline.resources import PipelineSettings
from edaqa_pipeline.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"
VENV_BIN = REPO / ".venv" / "bin"

DOCUMENT_ASSETS = (
    "parsed_documents",
    "typed_artifacts",
    "chunks",
    "occurrences",
    "chunk_embeddings",
)
UNIT_ASSETS = (
    "unit_hyperedges", "unit_nodes", "unit_provenance", "unit_chunk_edges",
    "unit_chunk_contents", "unit_type_bags", "unit_rejections",
)  # fmt: skip
CORPUS_ASSETS = (*UNIT_ASSETS, "unit_embeddings", "chunk_index", "release_changes")
# Hardware knowledge graphs from PDF datasheets: per-document and cross-document.
HWKG_DOCUMENT_ASSETS = ("datasheet_chunks", "datasheet_properties")
HWKG_CORPUS_ASSETS = ("hardware_kgs", "hardware_kg_instructions")
PARTITIONED_ASSETS = DOCUMENT_ASSETS + HWKG_DOCUMENT_ASSETS + ("elements",)
# ChipKG: built by its own job (edaqa index --chipkg), not by assemble_corpus.
CHIPKG_ASSETS = ("chip_kg_nodes", "chip_kg_triples")
# TechDocRAG: elements per document (index job), element_graph by its own job.
ELEMENT_DOCUMENT_ASSETS = ("elements",)
ELEMENT_CORPUS_ASSETS = ("element_graph",)
TRAINING_ASSETS = ("training_pairs", "trained_encoder", "tuned_embeddings")
EVALUATION_ASSETS: tuple[str, ...] = ("eval_reports",)
ALL_ASSETS = frozenset(
    PARTITIONED_ASSETS + CORPUS_ASSETS + HWKG_CORPUS_ASSETS + EVALUATION_ASSETS + CHIPKG_ASSETS
    + ELEMENT_CORPUS_ASSETS + TRAINING_ASSETS
)
JOBS = frozenset({"build_index", "index_document", "assemble_corpus", "build_chip_kg", "build_element_graph",
                  "train_encoder", "evaluate"})
SENSORS = frozenset({"corpus_sensor", "corpus_automation_sensor", "failed_documents_sensor"})
SCHEDULES = frozenset({"nightly_refresh"})

# Every variable that could point LLMResource(provider="auto") at a real endpoint.
LLM_ENV_VARS = (
    "EDAQA_LLM_BASE_URL", "EDAQA_LLM_API_KEY", "EDAQA_LLM_MODEL", "EDAQA_LLM_PROVIDER",
    "OPENAI_BASE_URL", "OPENAI_API_KEY",
)  # fmt: skip
# Variables that Settings.from_env() reads; tests pass every path explicitly instead.
EDAQA_PATH_VARS = ("EDAQA_CORPUS", "EDAQA_STORAGE", "EDAQA_LANCEDB_URI", "EDAQA_EXECUTOR")

# Small Markdown manuals: a command with options, a procedure, a table; two of them share the
# `place_design` command so that cross-document grouping has something to do.
DOC_A = """\
# Placement

Placement puts standard cells into legal rows. Run it after floorplanning and power planning.

## place_design

Run `place_design -timing_driven` to place the design with timing awareness.

```tcl
place_design -timing_driven -effort high
report_placement -summary
```

| Option | Default | Meaning |
|---|---|---|
| -timing_driven | off | weight timing-critical nets during placement |
| -effort | medium | low, medium or high |

## Checking the result

1. Run `report_placement -summary` to list overlaps.
2. Fix overlaps with `legalize_placement` before routing.
"""

DOC_B = """\
# Timing closure

Static timing analysis reads constraints and reports slack on every path.

## Reading constraints

Load the SDC file with `read_sdc constraints.sdc` before any timing report.

```tcl
read_sdc constraints.sdc
report_timing -max_paths 10
```

## After placement

Re-run `place_design -timing_driven` when the worst negative slack is below zero, then
check again with `report_timing -max_paths 10`.
"""

DOC_C = """\
# Routing

Routing connects the placed cells with metal wires.

## route_design

Run `route_design -global` first, then `route_design -detail` to finish the wires.

```tcl
route_design -global
route_design -detail
```
"""

# Valid UTF-8 Markdown without any block (only a comment): the parser refuses it with a
# DocumentError ("no Markdown content"), so the partition fails with a Failure.
NO_BLOCKS_DOC = "<!-- x -->\n"
# Invalid UTF-8 (0xff cannot start a sequence): parse_document raises a DocumentError.
CORRUPT_DOC = b"# Corrupt\n\nbad byte here: \xff\xfe end\n"


INJECTED_PROBLEM = "injected by the test: block rejected"


@contextlib.contextmanager
def failing_structure_check(*documents: str) -> Iterator[None]:
    """Make parsed_documents' blocking structural check fail for ``documents`` (in-process runs).

    Tests the Dagster wiring of a failed blocking check without depending on which inputs the
    parser happens to accept today: ``structure.block_problems`` reports one extra problem for
    the listed documents and is unchanged for every other one.
    """
    from edaqa_pipeline.validation import structure

    original = structure.block_problems

    def block_problems(df: Any, n_lines: int | None) -> list[str]:
        problems = list(original(df, n_lines))
        if df.height and set(df["document"].to_list()) & set(documents):
            problems.append(INJECTED_PROBLEM)
        return problems

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(structure, "block_problems", block_problems)
        yield


def write_corpus(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write ``{relative name: text or bytes}`` under ``root`` and return ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def copy_sample(root: Path, names: list[str]) -> Path:
    """Copy the named sample manuals from data/sample into ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy2(SAMPLE / name, root / name)
    return root


def make_settings(corpus: Path, storage: Path) -> Settings:
    """Settings with every write (tables, LanceDB, LLM cache) under ``storage``."""
    storage = storage.resolve()
    return Settings(
        corpus_root=corpus.resolve(), storage_root=storage, lancedb_uri=str(storage / "lancedb")
    )


def pipeline_settings(cfg: Settings) -> PipelineSettings:
    """The Dagster resource equivalent of ``cfg``."""
    return PipelineSettings(
        corpus_root=str(cfg.corpus_root),
        storage_root=str(cfg.storage_root),
        lancedb_uri=cfg.lancedb_uri,
        encoder_path=cfg.encoder_path,
        anchor_cap=cfg.anchor_cap,
    )


@contextlib.contextmanager
def offline_environment() -> Iterator[pytest.MonkeyPatch]:
    """No LLM endpoint and no EDAQA path variables for the duration (any scope)."""
    with pytest.MonkeyPatch.context() as mp:
        for name in (*LLM_ENV_VARS, *EDAQA_PATH_VARS):
            mp.delenv(name, raising=False)
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TOKENIZERS_PARALLELISM", "false")
        yield mp


def subprocess_env(storage: Path, dagster_home: Path | None = None, **extra: str) -> dict[str, str]:
    """Environment for a dagster CLI/server child: storage and DAGSTER_HOME in tmp, offline."""
    env = {
        k: v for k, v in os.environ.items() if k not in LLM_ENV_VARS and k not in EDAQA_PATH_VARS
    }
    env.update(
        EDAQA_STORAGE=str(storage),
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
        DAGSTER_DISABLE_TELEMETRY="1",
    )
    if dagster_home is not None:
        env["DAGSTER_HOME"] = str(dagster_home)
    env.update(extra)
    return env


def write_dagster_home(home: Path) -> Path:
    """A minimal instance folder: SQLite storage under it, telemetry off."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(
        f"storage:\n  sqlite:\n    base_dir: {home / 'storage'}\ntelemetry:\n  enabled: false\n"
    )
    return home


def reset_signals() -> None:
    """preexec_fn: this environment can hand children ignored SIGINT/SIGTERM; restore them."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process_group(proc: subprocess.Popen[Any], grace_s: float = 10.0) -> None:
    """Stop a child started with ``start_new_session=True``: SIGTERM, wait, then SIGKILL.

    Signals go to the child's own process group (its pgid is its pid), never by name.
    """
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=grace_s)
    # Children of the group (code-server subprocesses) may outlive the leader.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def step_failures(result: Any) -> dict[str, Any]:
    """{step key: StepFailureData} of an execution result's STEP_FAILURE events."""
    return {
        event.step_key: event.event_specific_data
        for event in result.all_events
        if event.event_type_value == "STEP_FAILURE"
    }


def materialized_keys(result: Any) -> set[str]:
    """User strings of the asset keys an execution result materialised."""
    return {
        event.event_specific_data.materialization.asset_key.to_user_string()
        for event in result.all_events
        if event.event_type_value == "ASSET_MATERIALIZATION"
    }


def check_outcomes(result: Any) -> dict[str, bool]:
    """{"asset:check": passed} of an execution result's check evaluations."""
    return {
        ev.asset_check_key.to_user_string(): ev.passed
        for ev in result.get_asset_check_evaluations()
    }
