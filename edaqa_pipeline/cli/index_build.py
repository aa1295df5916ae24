"""``edaqa index``'s driver: one Dagster run for everything that changed.

1. The corpus folder is scanned; partitions of new files are added, of deleted files deleted.
2. ``document_state.stale_documents`` reads the instance (latest materialisation of every
   per-document asset per partition) and the IO manager's stored tables: a document is built
   when its file, a code version or the settings changed, when it failed last time, or when a
   table of it is missing or older than its input (an interrupted build).
3. One ``build_index`` run covers the range of partitions holding those documents (documents
   of the range that did not change keep their tables) and then the cross-document assets;
   documents far apart in the partition order get a few runs (at most ``MAX_RUNS``), the
   corpus assets running in the last one. Nothing stale: no run at all (zero encodings, zero
   LLM calls); only deletions or an interrupted corpus step: ``assemble_corpus`` alone.
4. Each document the run left out is re-run alone (``index_document``, strict): its partition
   fails in the UI with the file named, and that message is what the report says. A file
   that failed to parse and has not changed since (nor the code or settings) is not run
   again: its recorded failure is reported.

Writes ``STORAGE/manifest.json``::

    {"documents": [...], "failed": [{"document", "error"}], "runs": [...],
     "tables": {ASSET: {"rows", "content_hash", "semantic_hash"}}, "timings": {STEP: s},
     "step_cpu_s": {STEP: s}, "units": {...}}
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edaqa_pipeline.cli.index import IndexReport, JobResult, instance_for, run_job, table_summary
from edaqa_pipeline.corpus.releases import Releases, scan_documents
from edaqa_pipeline.settings import settings_for
from edaqa_pipeline.storage.manifest import unit_counts

MAX_GAP = 64  # unchanged documents between two stale ones that one run covers rather than split
MAX_RUNS = 4
# A re-run of a failed document is expected to fail: its error is reported, not logged.
STRICT_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def spans(order: list[str], todo: set[str], max_gap: int = MAX_GAP, max_runs: int = MAX_RUNS) -> list[list[str]]:
    """Runs of ``order`` (the partition order) covering every key of ``todo``: consecutive
    stale keys join one run when fewer than ``max_gap`` unchanged keys lie between them, and
    the smallest gaps are merged until at most ``max_runs`` runs remain."""
    positions = [i for i, key in enumerate(order) if key in todo]
    if not positions:
        return []
    groups = [[positions[0], positions[0]]]
    for pos in positions[1:]:
        if pos - groups[-1][1] - 1 < max_gap:
            groups[-1][1] = pos
        else:
            groups.append([pos, pos])
    while len(groups) > max_runs:
        gaps = [groups[i + 1][0] - groups[i][1] for i in range(len(groups) - 1)]
        i = gaps.index(min(gaps))
        groups[i:i + 2] = [[groups[i][0], groups[i + 1][1]]]
    return [order[a:b + 1] for a, b in groups]


class _Progress:
    """A tqdm bar on stderr: documents of each per-document step, then each corpus step; and
    the CPU seconds of every step (differences between consecutive step ends)."""

    def __init__(self, show: bool, total: int) -> None:
        self.bar = None
        if show and total:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="step", file=sys.stderr, dynamic_ncols=True,
                            bar_format="{desc} {bar} {n_fmt}/{total_fmt} [{elapsed}]")
        self.cpu: dict[str, float] = {}
        self.mark = time.process_time()
        self.seen: dict[str, int] = {}

    def start_run(self) -> None:
        self.mark = time.process_time()

    def __call__(self, event: Any) -> None:
        if event.kind == "document":
            if self.bar is not None:
                self.bar.set_description_str(f"{event.step}: {event.done}/{event.total} documents")
                self.bar.refresh()
            return
        self.cpu[event.step] = self.cpu.get(event.step, 0.0) + event.cpu_s - self.mark
        self.mark = event.cpu_s
        if self.bar is not None:
            self.bar.set_description_str(f"{event.step} {'done' if event.success else 'FAILED'}")
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def build(corpus: Path, storage: Path, *, force: bool = False, log: Callable[..., None] = print,
          extra_jobs: tuple[str, ...] = (), progress: bool = False) -> IndexReport:
    """Index ``corpus`` into ``storage``; see the module docstring."""
    from dagster import AssetKey, in_process_executor

    from edaqa_pipeline.assets import document_specs, document_state
    from edaqa_pipeline.assets import progress as progress_events
    from edaqa_pipeline.assets.partitions import (
        DOCUMENT_ASSETS,
        DOCUMENTS,
        FORCE_TAG,
        ISOLATE_FAILURES_TAG,
    )
    from edaqa_pipeline.definitions import build_definitions
    from edaqa_pipeline.jobs import CORPUS_ASSETS
    from edaqa_pipeline.sensors import failed_documents, partial_documents, range_tags

    cfg = settings_for(corpus, storage)
    cfg.storage_root.mkdir(parents=True, exist_ok=True)
    instance = instance_for(cfg.storage_root)
    defs = build_definitions(cfg, executor=in_process_executor)
    io = defs.resources["io_manager"]
    scan = scan_documents(cfg)
    files = scan.files
    report = IndexReport(refused=[{"document": n, "error": p} for n, p in scan.refused],
                         skipped=[{"file": n, "type": t} for n, t in scan.skipped])
    current = {f.key: f.sha256 for f in files}
    existing = list(instance.get_dynamic_partitions(DOCUMENTS))
    added = sorted(set(current) - set(existing))
    if added:
        instance.add_dynamic_partitions(DOCUMENTS, added)
    report.deleted = sorted(set(existing) - set(current))
    for key in report.deleted:
        instance.delete_dynamic_partition(DOCUMENTS, key)
    order = [k for k in instance.get_dynamic_partitions(DOCUMENTS) if k in current]

    graph = defs.resolve_asset_graph()
    code_versions = {k.to_user_string(): graph.get(k).code_version for k in graph.get_all_asset_keys()}
    document_assets = [a for a in DOCUMENT_ASSETS if graph.has(AssetKey(a))]
    infos = document_specs.asset_infos(defs.resources, code_versions, document_assets)
    if force:
        stale, known = dict.fromkeys(current, "--force"), {}
    else:
        found = document_state.stale_documents(instance, io, current, infos)
        stale, known = found.stale, found.known_failures
    runs = spans(order, set(stale))
    corpus_checks = [k for k in graph.asset_check_keys if k.asset_key.to_user_string() in CORPUS_ASSETS]
    corpus_reason = None if runs else document_state.corpus_is_stale(
        instance, io, CORPUS_ASSETS, code_versions, [k for k in current if k not in known],
        document_assets, corpus_checks)

    corpus_steps = len(defs.resolve_job_def("assemble_corpus").nodes_in_topological_order)
    bar = _Progress(progress, len(document_assets) * len(runs) + (corpus_steps if runs or corpus_reason else 0)
                    + sum(len(defs.resolve_job_def(j).nodes_in_topological_order) for j in extra_jobs))
    timings: dict[str, float] = {}
    failed: dict[str, str] = dict(known)
    partial: dict[str, list[dict[str, Any]]] = {}  # PDFs indexed without some pages
    run_log: list[dict[str, Any]] = []

    def launch(job: str, tags: dict[str, str] | None = None, partition_key: str | None = None,
               run_config: dict[str, Any] | None = None) -> JobResult:
        bar.start_run()
        with progress_events.listening(bar):
            result = run_job(cfg, job, run_config, tags=tags, partition_key=partition_key, defs=defs,
                             instance=instance)
        for step, seconds in result.timings.items():
            timings[step] = timings.get(step, 0.0) + seconds
        partial.update(partial_documents(instance, result.run_id))
        run_log.append({"job": job, "run_id": result.run_id, "success": result.success,
                        "documents": tags.get("edaqa/documents") if tags else partition_key})
        return result

    try:
        for number, keys in enumerate(runs, 1):
            job = "build_index" if number == len(runs) else "index_document"
            tags = {**range_tags(order, keys), ISOLATE_FAILURES_TAG: "1", "edaqa/documents": str(len(keys))}
            if force:
                tags[FORCE_TAG] = "1"
            started = time.perf_counter()
            result = launch(job, tags)
            if not result.success:
                raise RuntimeError(f"{job} failed: {result.message}")
            found = failed_documents(instance, result.run_id)
            failed.update(found)
            log(f"[{number}/{len(runs)}] {job}: {len(keys)} documents ({len(set(keys) & set(stale))} "
                f"stale, {len(found)} failed) in {time.perf_counter() - started:.1f} s")
        if corpus_reason:
            log(f"assemble_corpus ({corpus_reason})")
            result = launch("assemble_corpus")
            if not result.success:
                raise RuntimeError(f"cross-document assets failed: {result.message}")
        recovered = False
        for key in sorted(set(failed) - set(known)):  # each failed document alone: it fails visibly
            result = launch("index_document", {ISOLATE_FAILURES_TAG: "0"}, partition_key=key,
                            run_config=STRICT_RUN_CONFIG)
            if result.success:
                recovered = True
                del failed[key]
            else:
                failed[key] = result.message or failed[key]
                log(f"FAILED {key}: {failed[key]}")
        if recovered:
            launch("assemble_corpus")
        for job_name in extra_jobs:  # optional method-specific graphs, e.g. build_chip_kg
            result = launch(job_name)
            if not result.success:
                raise RuntimeError(f"{job_name} failed: {result.message}")
    finally:
        bar.close()

    report.failed = [{"document": k, "error": v} for k, v in sorted(failed.items())]
    report.reindexed = sorted(k for k in stale if k not in failed)
    report.documents = sorted(k for k in current if k not in failed)
    manifest = {
        "corpus": str(cfg.corpus_root),
        "releases": [r.to_json() for r in Releases.load(cfg.storage_root).items],
        "documents": report.documents,
        "failed": report.failed + report.refused,
        "skipped": report.skipped,
        "partial": [{"document": k, "failed_pages": v} for k, v in partial.items() if k not in failed],
        "runs": run_log,
        "tables": table_summary(cfg, report.documents),
        "timings": {k: round(v, 3) for k, v in sorted(timings.items())},
        "step_cpu_s": {k: round(v, 3) for k, v in sorted(bar.cpu.items())},
        "units": unit_counts(cfg.tables_dir),
    }
    (cfg.storage_root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
    report.manifest = manifest
    return report
