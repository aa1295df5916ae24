"""The ``edaqa index`` command: build (or refresh) the indexes of a corpus through Dagster.

``index`` goes through Dagster (the storage root's persistent instance, so every run shows in
the UI that ``make dev`` starts on the same root); ``ask`` and ``eval`` read the stored tables
and LanceDB directly and never load Dagster, so answering starts fast.

``index_corpus`` (``cli.index_build``) runs the documents that changed, and the
cross-document assets, as ONE ``build_index`` run (a failed document is then re-run alone so
that it fails visibly); what changed is read from the instance itself (``document_state``),
not from a state file. ``run_job`` runs any job of the definitions on the same instance;
``instance_for`` is that instance: ``STORAGE/dagster_home``, configured from the repo's
``dagster.yaml`` (run queue, pools) with SQLite storage, or PostgreSQL when
``EDAQA_POSTGRES_URL`` is set when the root is first used (a team deployment).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edaqa_pipeline.cli.estimate import add_estimate_command
from edaqa_pipeline.cli.query import env_default
from edaqa_pipeline.cli.releases import (
    add_release_arguments,
    add_releases_command,
    check_indexed,
    register_release,
)
from edaqa_pipeline.corpus.releases import ReleaseError
from edaqa_pipeline.model import readable_suffixes
from edaqa_pipeline.settings import REPO_ROOT, Settings, settings_for
from edaqa_pipeline.storage.manifest import table_summary as summarise_tables

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEFAULT_INSTANCE_YAML = """\
# Instance of `edaqa index` runs on this storage root (written by edaqa; safe to edit).
telemetry:
  enabled: false
"""
POSTGRES_SCHEME = "postgresql+psycopg2://"
POSTGRES_STORAGE = """\
# PostgreSQL storage (runs, event logs, schedules): EDAQA_POSTGRES_URL was set when this
# storage root was first used; the URL itself is read from the environment at start-up.
storage:
  postgres:
    postgres_url:
      env: EDAQA_POSTGRES_URL
"""


@dataclass
class IndexReport:
    documents: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)  # files no parser reads
    reindexed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)


def instance_config() -> str:
    """The dagster.yaml of a new storage root: the repo's (queue, pools, telemetry) plus a
    PostgreSQL storage block when ``EDAQA_POSTGRES_URL`` is set (SQLite under the home
    otherwise)."""
    template = REPO_ROOT / "dagster.yaml"
    text = template.read_text() if template.is_file() else DEFAULT_INSTANCE_YAML
    url = os.environ.get("EDAQA_POSTGRES_URL", "").strip()
    if url:
        if not url.startswith(POSTGRES_SCHEME):
            raise ValueError(f"EDAQA_POSTGRES_URL must start with {POSTGRES_SCHEME} (the psycopg2 "
                             "driver dagster-postgres runs on), e.g. "
                             f"{POSTGRES_SCHEME}user@127.0.0.1:5432/dagster")
        text = text.rstrip("\n") + "\n" + POSTGRES_STORAGE
    return text


def dagster_home(storage: Path) -> Path:
    """``STORAGE/dagster_home`` with its dagster.yaml (written on first use)."""
    home = Path(storage).resolve() / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(instance_config())
    return home


def instance_for(storage: Path):  # type: ignore[no-untyped-def]
    """The persistent Dagster instance of this storage root (created on first use); the same
    one ``make dev`` serves for that root."""
    from dagster import DagsterInstance

    home = dagster_home(storage)
    os.environ["DAGSTER_HOME"] = str(home)
    return DagsterInstance.get()


QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def interrupted(result: Any) -> bool:
    """Whether a failed run was stopped by Ctrl-C. Inside a run Dagster turns SIGINT into a
    ``DagsterExecutionInterruptedError`` of the running step, so without this the command
    would report a failed build (and ``--watch`` would go on watching) instead of stopping."""
    for event in result.all_events:
        error = getattr(event.event_specific_data, "error", None)
        while error is not None:
            if error.cls_name == "DagsterExecutionInterruptedError":
                return True
            error = error.cause
    return False


def failure_message(result: Any) -> str:
    """The user-facing reason of a failed run: a failed blocking check, a ``Failure``
    description, else the root error."""
    from dagster import AssetCheckSeverity

    for event in result.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            evaluation = event.event_specific_data
            if not evaluation.passed and evaluation.severity == AssetCheckSeverity.ERROR:
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


def step_seconds(instance: Any, run_id: str, timings: dict[str, float]) -> None:
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


def run_job(cfg: Settings, job_name: str, run_config: dict[str, Any] | None = None, *,
            tags: dict[str, str] | None = None, partition_key: str | None = None,
            defs: Any = None, instance: Any = None) -> JobResult:
    """Run one job of the definitions for ``cfg`` on the storage root's persistent instance
    (in process, so the runs, their events and metadata show in the UI). ``metadata`` holds
    each asset's metadata (of its last partition for per-document assets)."""
    from dagster import in_process_executor

    from edaqa_pipeline.definitions import build_definitions

    instance = instance or instance_for(cfg.storage_root)
    defs = defs or build_definitions(cfg, executor=in_process_executor)
    config = {**QUIET_RUN_CONFIG, **(run_config or {})}
    result = defs.resolve_job_def(job_name).execute_in_process(
        instance=instance, run_config=config, raise_on_error=False, tags=tags,
        partition_key=partition_key)
    if not result.success and interrupted(result):
        raise KeyboardInterrupt  # Ctrl-C in a step: Dagster has recorded the run as failed
    timings: dict[str, float] = {}
    step_seconds(instance, result.run_id, timings)
    metadata: dict[str, dict[str, Any]] = {}
    for event in result.all_events:
        if event.event_type_value == "ASSET_MATERIALIZATION":
            mat = event.event_specific_data.materialization
            metadata[mat.asset_key.to_user_string()] = {k: v.value for k, v in mat.metadata.items()}
    return JobResult(result.success, "" if result.success else failure_message(result),
                     result.run_id, timings, metadata)


def table_summary(cfg: Settings, documents: list[str]) -> dict[str, dict[str, Any]]:
    """Rows and hashes of every table ``edaqa index`` builds (the manifest's ``tables``)."""
    from edaqa_pipeline.jobs import CORPUS_ASSETS, DOCUMENT_ASSETS

    return summarise_tables(cfg.tables_dir, documents, DOCUMENT_ASSETS, CORPUS_ASSETS)


def index_corpus(corpus: Path, storage: Path, *, force: bool = False, log=print,  # type: ignore[no-untyped-def]
                 extra_jobs: tuple[str, ...] = (), progress: bool = False) -> IndexReport:
    """Index ``corpus`` into ``storage`` (see ``cli.index_build``); ``progress``: show a
    progress bar (documents, then each corpus step) on stderr."""
    from edaqa_pipeline.cli.index_build import build

    return build(Path(corpus), Path(storage), force=force, log=log, extra_jobs=extra_jobs,
                 progress=progress)


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
    try:
        was_new = register_release(Path(args.corpus), Path(args.storage), args.release, args.release_date)
        report = index_corpus(Path(args.corpus), Path(args.storage), force=args.force,
                              log=(lambda *_: None) if args.quiet else print, extra_jobs=extra,
                              progress=not args.quiet)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    status = _print_report(args, report, started)
    unusable = args.release and check_indexed(Path(args.storage), args.release, report.documents, was_new)
    if unusable:
        print(f"FAILED {args.corpus}: {unusable}", file=sys.stderr)
        return 1
    return _watch(args, extra) if args.watch else status


def _corpus_state(corpus: Path) -> list[tuple[str, int, int]]:
    """Every file under ``corpus`` by relative path, size and modification time (stat only)."""
    return sorted((p.relative_to(corpus).as_posix(), (st := p.stat()).st_size, st.st_mtime_ns)
                  for p in corpus.rglob("*") if p.is_file())


def _settle(corpus: Path, interval: float) -> list[tuple[str, int, int]]:
    """The corpus state one interval later. A save that truncates, then writes (most editors,
    ``Path.write_text``) shows as two changes; indexing the first would index the file twice
    or a half-written file once."""
    time.sleep(interval)
    return _corpus_state(corpus)


def _stop_on_sigterm() -> None:
    """``kill PID`` stops the watcher as Ctrl-C does. Why again after every run: while a run
    executes, Dagster points SIGTERM at SIGINT's handler and afterwards restores both to
    SIGINT's original one. A watcher started as a background job (SIGINT ignored) would then
    ignore SIGTERM as well, and only SIGKILL would stop it."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)


def _watch(args: argparse.Namespace, extra: tuple[Any, ...]) -> int:
    """``--watch``: re-index whenever a file of the corpus changes, in this process, until
    Ctrl-C. Why a process that stays: a new ``edaqa index`` pays its imports and start-up
    (great-expectations, Dagster's definitions: about 2 s with nothing to do) before any work,
    which is most of a one-document edit; here the edit costs its work (openroad-2024: 2.6 s
    warm against 7.1 s in a new process). Each re-index is the same ``index_corpus`` (one
    Dagster run on the storage root's instance), so the UI shows every run."""
    corpus, storage = Path(args.corpus), Path(args.storage)
    seen = _corpus_state(corpus)
    _stop_on_sigterm()
    print(f"watching {corpus} every {args.watch:g} s (Ctrl-C or kill stops)", flush=True)
    status = 0
    try:
        while True:
            time.sleep(args.watch)
            now = _corpus_state(corpus)
            if now == seen:
                continue
            while (settled := _settle(corpus, args.watch)) != now:
                now = settled  # still being written: index the file once it stops changing
            seen, started = now, time.perf_counter()
            report = index_corpus(corpus, storage, log=lambda *_: None, extra_jobs=extra)
            _stop_on_sigterm()
            status = 1 if report.manifest["failed"] else 0
            print(f"re-indexed {len(report.reindexed)} documents, removed {len(report.deleted)}, "
                  f"failed {len(report.manifest['failed'])}, in {time.perf_counter() - started:.1f} s",
                  flush=True)
            for failure in report.manifest["failed"]:
                print(f"FAILED {failure['document']}: {failure['error']}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("stopped watching", flush=True)
    return status


def _print_report(args: argparse.Namespace, report: IndexReport, started: float) -> int:
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
    for entry in manifest.get("partial", []):
        pages = "; ".join(f"page {p['page']}: {p['error']}" for p in entry["failed_pages"])
        print(f"PARTIAL {entry['document']}: indexed without {len(entry['failed_pages'])} "
              f"page(s) ({pages})", file=sys.stderr)
    return _report_skipped(manifest, args.corpus) or (1 if manifest["failed"] else 0)


MAX_SKIPPED_SHOWN = 20  # skipped files named in the output; the manifest lists them all


def _report_skipped(manifest: dict[str, Any], corpus: str) -> int:
    """Print the files no parser reads, by type; 1 when the corpus gave no document at all
    (a folder of unreadable files is an error, not an empty index)."""
    skipped = manifest.get("skipped", [])
    if skipped:
        by_type = Counter(s["type"] for s in skipped)
        print(f"  skipped {len(skipped)} files no parser reads: "
              + ", ".join(f"{t}={n}" for t, n in sorted(by_type.items())))
        for entry in skipped[:MAX_SKIPPED_SHOWN]:
            print(f"  skipped {entry['file']} ({entry['type']})")
        if len(skipped) > MAX_SKIPPED_SHOWN:
            print(f"  ... and {len(skipped) - MAX_SKIPPED_SHOWN} more (manifest.json lists every one)")
    if manifest["documents"]:
        return 0
    types = ", ".join(sorted({s["type"] for s in skipped})) or "no files"
    print(f"FAILED {corpus}: no document could be read (found: {types}; EDAQA reads "
          f"{readable_suffixes()})",
          file=sys.stderr)
    return 1


def _cmd_dagster_home(args: argparse.Namespace) -> int:
    return print(dagster_home(Path(args.storage))) or 0


def _path_arguments(parser: argparse.ArgumentParser, *names: str) -> None:
    """--corpus / --storage, defaulting to $EDAQA_CORPUS / $EDAQA_STORAGE."""
    for name in names:
        variable = f"EDAQA_{name.upper()}"
        default = env_default(variable)
        parser.add_argument(f"--{name}", default=default, required=default is None,
                            help=f"(default: ${variable})")


def add_index_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("index", help="materialise every asset for a corpus (through Dagster)")
    _path_arguments(p, "corpus", "storage")
    p.add_argument("--force", action="store_true", help="recompute every document")
    p.add_argument("--quiet", action="store_true", help="no progress bar or per-run lines")
    p.add_argument("--watch", type=float, default=0.0, metavar="SECONDS",
                   help="after indexing, stay and re-index whenever a corpus file changes "
                   "(checked every SECONDS; Ctrl-C stops): an edit then costs its work, not a "
                   "new process's start-up")
    p.add_argument("--with", dest="with_", default="",
                   help="also build method graphs: chipkg (chipmind methods), techdoc (element "
                   "graph), train (function-aware encoder for fa_hybrid_tuned), eval (the "
                   "eval_reports asset over every built method); comma-separated, run in "
                   "that order; minutes each on large corpora")
    add_release_arguments(p)
    p.set_defaults(func=_cmd_index)
    add_releases_command(sub)

    p = sub.add_parser("dagster-home", help="print (and create) the Dagster home of a storage "
                       "root: DAGSTER_HOME for `dagster dev` on the same instance as edaqa index")
    _path_arguments(p, "storage")
    p.set_defaults(func=_cmd_dagster_home)

    add_estimate_command(sub, _path_arguments)
