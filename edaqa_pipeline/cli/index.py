"""The ``edaqa`` command: index a corpus, ask questions, evaluate, estimate LLM cost.

``index`` goes through Dagster (a persistent local instance, so runs show in the UI);
``ask`` and ``eval`` read the stored tables and LanceDB directly and never load Dagster,
so answering starts fast.

``index_corpus`` (``edaqa index``) is this module's Dagster part (dagster, the definitions
and the jobs are imported inside it): it materialises every asset for a corpus through a
persistent Dagster instance. The runs land in ``STORAGE/dagster_home`` (SQLite), so ``dagster dev`` pointed at the same
``DAGSTER_HOME`` shows them. Only documents whose bytes changed since the last successful
index, or that lack a table of a per-document asset (one added to the pipeline since), are
re-run (``STORAGE/index_state.json``); deleted documents lose their partition and
their stored rows; the cross-document assets then run once, incrementally. A document that
fails is reported (file + reason) and leaves no stale rows behind; every other one indexes.

Writes ``STORAGE/manifest.json``::

    {"documents": [...], "failed": [{"document", "error"}],
     "tables": {ASSET: {"rows", "content_hash", "semantic_hash"}}, "timings": {ASSET: s},
     "units": {...}}
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edaqa_pipeline.corpus.scan import CorpusFile, scan_corpus
from edaqa_pipeline.settings import Settings, settings_for
from edaqa_pipeline.storage.manifest import load_state, save_state, unit_counts
from edaqa_pipeline.storage.manifest import table_summary as summarise_tables
from edaqa_pipeline.storage.tables import drop_partition, missing_partitions, read_table

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# --- edaqa index: Dagster runs on a persistent local instance ---------------------------------

DAGSTER_YAML = """\
# Local instance for `edaqa index` runs (written by edaqa; safe to edit).
storage:
  sqlite:
    base_dir: {base}
telemetry:
  enabled: false
"""


@dataclass
class IndexReport:
    documents: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)
    reindexed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)




def instance_for(storage: Path):  # type: ignore[no-untyped-def]
    """The persistent Dagster instance of this storage root (created on first use)."""
    from dagster import DagsterInstance

    home = storage / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML.format(base=str(home / "storage")))
    os.environ["DAGSTER_HOME"] = str(home)
    return DagsterInstance.get()


QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _failure_message(result: Any) -> str:
    """The user-facing reason of a failed run: a ``Failure`` description, else the root error."""
    for event in result.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            evaluation = event.event_specific_data
            if not evaluation.passed:
                problems = evaluation.metadata.get("problems") or evaluation.metadata.get("failed")
                detail = getattr(problems, "value", None) or "failed"
                return (f"{evaluation.asset_key.to_user_string()} check "
                        f"{evaluation.check_name} failed: {detail}")
    for event in result.all_events:
        if event.event_type_value != "STEP_FAILURE":
            continue
        data = event.event_specific_data
        if data.user_failure_data is not None and data.user_failure_data.description:
            return data.user_failure_data.description
        error = data.error
        while error is not None and error.cause is not None:
            error = error.cause
        if error is None:
            return "step failed"
        message = error.message.strip().splitlines()[-1] if error.message.strip() else ""
        if message.startswith(f"{error.cls_name}:"):
            return f"{event.step_key}: {message}"
        return f"{event.step_key}: {error.cls_name}: {message}"
    return "run failed"


def _step_seconds(instance: Any, run_id: str, timings: dict[str, float]) -> None:
    for stat in instance.get_run_step_stats(run_id):
        if stat.start_time and stat.end_time:
            timings[stat.step_key] = timings.get(stat.step_key, 0.0) + (stat.end_time - stat.start_time)


@dataclass
class JobResult:
    success: bool
    message: str = ""
    run_id: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)  # asset -> its metadata


def run_job(cfg: Settings, job_name: str, run_config: dict[str, Any] | None = None) -> JobResult:
    """Run one job of the definitions for ``cfg`` on the storage root's persistent instance
    (in process, so the runs, their events and metadata show in the UI)."""
    from dagster import in_process_executor

    from edaqa_pipeline.definitions import build_definitions

    instance = instance_for(cfg.storage_root)
    defs = build_definitions(cfg, executor=in_process_executor)
    config = {**QUIET_RUN_CONFIG, **(run_config or {})}
    result = defs.resolve_job_def(job_name).execute_in_process(
        instance=instance, run_config=config, raise_on_error=False)
    timings: dict[str, float] = {}
    _step_seconds(instance, result.run_id, timings)
    metadata: dict[str, dict[str, Any]] = {}
    for event in result.all_events:
        if event.event_type_value == "ASSET_MATERIALIZATION":
            mat = event.event_specific_data.materialization
            metadata[mat.asset_key.to_user_string()] = {k: v.value for k, v in mat.metadata.items()}
    return JobResult(result.success, "" if result.success else _failure_message(result),
                     result.run_id, timings, metadata)


def table_summary(cfg: Settings, documents: list[str]) -> dict[str, dict[str, Any]]:
    """Rows and hashes of every table ``edaqa index`` builds (the manifest's ``tables``)."""
    from edaqa_pipeline.jobs import CORPUS_ASSETS, DOCUMENT_ASSETS

    return summarise_tables(cfg.tables_dir, documents, DOCUMENT_ASSETS, CORPUS_ASSETS)


def index_corpus(corpus: Path, storage: Path, *, force: bool = False, log=print,  # type: ignore[no-untyped-def]
                 extra_jobs: tuple[str, ...] = ()) -> IndexReport:
    """Index ``corpus`` into ``storage``; see the module docstring."""
    from dagster import in_process_executor

    from edaqa_pipeline.assets.partitions import DOCUMENTS
    from edaqa_pipeline.definitions import build_definitions
    from edaqa_pipeline.jobs import CORPUS_ASSETS, DOCUMENT_ASSETS

    cfg = settings_for(corpus, storage)
    cfg.storage_root.mkdir(parents=True, exist_ok=True)
    instance = instance_for(cfg.storage_root)
    defs = build_definitions(cfg, executor=in_process_executor)
    doc_job = defs.resolve_job_def("index_document")
    corpus_job = defs.resolve_job_def("assemble_corpus")

    files, refused = scan_corpus(cfg.corpus_root)
    report = IndexReport(refused=[{"document": n, "error": p} for n, p in refused])
    state_path = cfg.storage_root / "index_state.json"
    state = {} if force else load_state(state_path)
    current = {f.key: f for f in files}
    existing = set(instance.get_dynamic_partitions(DOCUMENTS))
    new_keys = sorted(set(current) - existing)
    if new_keys:
        instance.add_dynamic_partitions(DOCUMENTS, new_keys)
    gone = sorted(existing - set(current))
    for key in gone:
        instance.delete_dynamic_partition(DOCUMENTS, key)
    for key in sorted(set(state) - set(current)) + gone:
        drop_partition(cfg.tables_dir, DOCUMENT_ASSETS, key)
        state.pop(key, None)
        if key not in report.deleted:
            report.deleted.append(key)

    timings: dict[str, float] = {}
    # A document runs when its bytes changed, or when one of its per-document tables is missing
    # (an asset added to the pipeline since it was indexed, or a table removed by hand).
    todo: list[CorpusFile] = [
        f for f in files
        if state.get(f.key) != f.sha256 or missing_partitions(cfg.tables_dir, DOCUMENT_ASSETS, f.key)
    ]
    for number, file in enumerate(todo, 1):
        started = time.perf_counter()
        result = doc_job.execute_in_process(partition_key=file.key, instance=instance,
                                            run_config=QUIET_RUN_CONFIG, raise_on_error=False)
        _step_seconds(instance, result.run_id, timings)
        if result.success:
            state[file.key] = file.sha256
            save_state(state_path, state)  # an interrupted index resumes after this document
            report.reindexed.append(file.key)
            log(f"[{number}/{len(todo)}] indexed {file.key} ({time.perf_counter() - started:.1f} s)")
        else:
            message = _failure_message(result)
            drop_partition(cfg.tables_dir, DOCUMENT_ASSETS, file.key)
            state.pop(file.key, None)
            report.failed.append({"document": file.key, "error": message})
            log(f"[{number}/{len(todo)}] FAILED {file.key}: {message}")
    save_state(state_path, state)

    # The corpus assets are rebuilt whenever the set of indexed documents differs from the one
    # they were last built for (also after an interrupted run that indexed documents but died
    # before this step).
    corpus_state = cfg.storage_root / "corpus_state.json"
    fingerprint = hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()
    built_for = json.loads(corpus_state.read_text()).get("fingerprint") if corpus_state.is_file() else None
    corpus_missing = any(read_table(cfg.tables_dir, a) is None for a in CORPUS_ASSETS)
    if built_for != fingerprint or corpus_missing or force or report.reindexed:
        result = corpus_job.execute_in_process(instance=instance, run_config=QUIET_RUN_CONFIG,
                                               raise_on_error=False)
        _step_seconds(instance, result.run_id, timings)
        if not result.success:
            raise RuntimeError(f"cross-document assets failed: {_failure_message(result)}")
        corpus_state.write_text(json.dumps({"fingerprint": fingerprint}))
    for job_name in extra_jobs:  # optional method-specific graphs, e.g. build_chip_kg
        result = defs.resolve_job_def(job_name).execute_in_process(
            instance=instance, run_config=QUIET_RUN_CONFIG, raise_on_error=False)
        _step_seconds(instance, result.run_id, timings)
        if not result.success:
            raise RuntimeError(f"{job_name} failed: {_failure_message(result)}")

    report.documents = sorted(k for k in current if k in state)
    manifest = {
        "corpus": str(cfg.corpus_root),
        "documents": report.documents,
        "failed": sorted(report.failed, key=lambda f: f["document"]) + report.refused,
        "tables": table_summary(cfg, report.documents),
        "timings": {k: round(v, 3) for k, v in sorted(timings.items())},
        "units": unit_counts(cfg.tables_dir),
    }
    (cfg.storage_root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
    report.manifest = manifest
    return report


# --- the commands ---------------------------------------------------------------------------


def _cmd_index(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    from edaqa_pipeline.jobs import EXTRA_JOBS

    wanted = [w.strip() for w in (args.with_ or "").split(",") if w.strip()]
    unknown = [w for w in wanted if w not in EXTRA_JOBS]
    if unknown:
        print(f"error: --with takes {', '.join(EXTRA_JOBS)}; got {', '.join(unknown)}", file=sys.stderr)
        return 2
    extra = tuple(job for name, job in EXTRA_JOBS.items() if name in wanted)
    report = index_corpus(Path(args.corpus), Path(args.storage), force=args.force,
                          log=(lambda *_: None) if args.quiet else print, extra_jobs=extra)
    manifest = report.manifest
    tables = manifest["tables"]
    print(f"\nindexed {len(report.documents)} documents into {args.storage} "
          f"({len(report.reindexed)} re-run, {len(report.deleted)} removed) in "
          f"{time.perf_counter() - started:.1f} s")
    for asset in ("parsed_documents", "typed_artifacts", "occurrences", "chunks", "unit_hyperedges"):
        if asset in tables:
            print(f"  {asset:<18} {tables[asset]['rows']:>7} rows")
    if "typed_artifacts" in tables:
        from edaqa_pipeline.storage.tables import read_partitions

        cfg = settings_for(Path(args.corpus), Path(args.storage))
        arts = read_partitions(cfg.tables_dir, "typed_artifacts", report.documents)
        if arts is not None:
            counts = Counter(arts["artifact_type"].to_list())
            print("  artifacts by type: " + ", ".join(f"{t}={n}" for t, n in sorted(counts.items())))
    units = manifest.get("units") or {}
    if units:
        print(f"  units: {units['units_within_source']} within documents, "
              f"{units['units_cross_document']} cross-document; rejections {units['rejections']}")
    for failure in manifest["failed"]:
        print(f"FAILED {failure['document']}: {failure['error']}", file=sys.stderr)
    return 1 if manifest["failed"] else 0


def _cmd_estimate(args: argparse.Namespace) -> int:
    from edaqa_pipeline.corpus.scan import scan_corpus
    from edaqa_pipeline.extraction.semantic_llm import prompt_pairs
    from edaqa_pipeline.llm import estimate_tokens
    from edaqa_pipeline.parsing.documents import parse_document
    from edaqa_pipeline.parsing.errors import DocumentError

    files, _ = scan_corpus(Path(args.corpus))
    pairs: list[tuple[str, str]] = []
    skipped = 0
    for file in files:
        try:
            _, blocks = parse_document(file.path.read_bytes(), file.key)
        except DocumentError:
            skipped += 1
            continue
        pairs.extend(prompt_pairs(blocks))
    estimate = estimate_tokens(pairs)
    estimate.update({"documents": len(files) - skipped, "documents_unparseable": skipped,
                     "task": "semantic_spans"})
    print(json.dumps(estimate, indent=2, sort_keys=True))
    return 0


def add_index_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("index", help="materialise every asset for a corpus (through Dagster)")
    p.add_argument("--corpus", required=True)
    p.add_argument("--storage", required=True)
    p.add_argument("--force", action="store_true", help="re-run every document")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--with", dest="with_", default="",
                   help="also build method graphs: chipkg (chipmind methods), techdoc (element "
                   "graph), train (function-aware encoder for fa_hybrid_tuned), eval (the "
                   "eval_reports asset over every built method); comma-separated, run in "
                   "that order; minutes each on large corpora")
    p.set_defaults(func=_cmd_index)

    p = sub.add_parser("estimate", help="tokens and calls a full LLM build would need")
    p.add_argument("--corpus", required=True)
    p.set_defaults(func=_cmd_estimate)
