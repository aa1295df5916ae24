"""Sensors: keep the ``documents`` partitions in step with the corpus folder, and make every
document that failed inside a many-document run fail visibly on its own partition.

``corpus_sensor``: each tick hashes every document (SHA-256 of its bytes) and compares with
the JSON cursor of the previous tick. New files add a partition; new and changed files are
built by ONE ``build_index`` run over the range of partitions that holds them (unchanged
documents inside the range keep their stored tables, ``per_document``), which also rebuilds
the cross-document assets; deleted files delete their partition and, when nothing else runs,
request ``assemble_corpus`` (``chunk_index`` then removes their stored tables and index rows
through the IO manager, as ``edaqa index`` does). ``run_key`` = keys + content hashes + the
tick's generation, so the same content is never built twice by one tick.

``failed_documents_sensor``: after a successful run that isolated failures (several
documents, or ``ISOLATE_FAILURES_TAG``), one strict ``index_document`` run per document that
was left out, so the UI shows its partition failed with the file named (Dagster cannot fail
single partitions of a multi-partition step, dagster issue #17836).
"""

import json
from collections.abc import Sequence
from typing import Any

from dagster import (
    AddDynamicPartitionsRequest,
    DagsterEventType,
    DagsterRunStatus,
    DefaultSensorStatus,
    DeleteDynamicPartitionsRequest,
    RunRequest,
    RunStatusSensorContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    run_status_sensor,
    sensor,
)

from edaqa_pipeline.assets.document_specs import PARTITION_RANGE_END_TAG, PARTITION_RANGE_START_TAG
from edaqa_pipeline.assets.document_state import FAILED, FAILED_PAGES
from edaqa_pipeline.assets.partitions import DOCUMENT_ASSETS, DOCUMENTS, ISOLATE_FAILURES_TAG
from edaqa_pipeline.corpus.releases import scan_documents
from edaqa_pipeline.jobs import assemble_corpus_job, build_index_job, index_document_job
from edaqa_pipeline.resources import PipelineSettings


def corpus_changes(previous: dict[str, str], current: dict[str, str]) -> tuple[list[str], list[str], list[str]]:
    """(added, changed, deleted) document keys, each sorted."""
    added = sorted(set(current) - set(previous))
    changed = sorted(k for k in set(current) & set(previous) if current[k] != previous[k])
    deleted = sorted(set(previous) - set(current))
    return added, changed, deleted


def load_cursor(raw: str | None) -> tuple[int, dict[str, str]]:
    """(generation, {key: sha256}); also reads the plain {key: sha256} cursor of older versions."""
    data = json.loads(raw) if raw else {}
    if isinstance(data.get("documents"), dict):
        return int(data.get("generation", 0)), data["documents"]
    return 0, data


def dump_cursor(generation: int, documents: dict[str, str]) -> str:
    return json.dumps({"generation": generation, "documents": documents}, sort_keys=True)


def range_tags(order: Sequence[str], keys: Sequence[str]) -> dict[str, str]:
    """Partition-range tags of the smallest range of ``order`` (the instance's partition
    order) that holds every key of ``keys``."""
    positions = sorted(order.index(k) for k in keys)
    return {PARTITION_RANGE_START_TAG: order[positions[0]],
            PARTITION_RANGE_END_TAG: order[positions[-1]]}


def build_request(order: Sequence[str], keys: Sequence[str], run_key: str, reason: str) -> RunRequest:
    """One ``build_index`` run over ``keys`` (and the corpus assets), failures isolated."""
    return RunRequest(run_key=run_key, job_name=build_index_job.name,
                      tags={**range_tags(order, keys), ISOLATE_FAILURES_TAG: "1",
                            "edaqa/reason": reason, "edaqa/documents": str(len(keys))})


@sensor(
    jobs=[build_index_job, assemble_corpus_job],
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.STOPPED,
    description="Adds/deletes document partitions; one run builds every new or changed file.",
)
def corpus_sensor(context: SensorEvaluationContext, settings: PipelineSettings) -> SensorResult | SkipReason:
    cfg = settings.settings()
    scan = scan_documents(cfg)
    files = scan.files
    for name, problem in scan.refused:
        context.log.warning(f"refused {name}: {problem}")
    current = {f.key: f.sha256 for f in files}
    generation, previous = load_cursor(context.cursor)
    # run_keys carry the tick's generation: the daemon skips a run_key it has seen, so a
    # reverted, re-added or re-deleted file must never reuse one. A tick retried after a crash
    # (cursor not committed) reuses its generation, so it is still deduplicated.
    tick = generation + 1
    existing = list(context.instance.get_dynamic_partitions(DOCUMENTS))
    added, changed, deleted = corpus_changes(previous, current)
    to_add = sorted(k for k in current if k not in set(existing))
    to_delete = sorted(k for k in deleted if k in set(existing))
    order = [k for k in existing if k not in set(to_delete)] + to_add
    build = sorted(set(added) | set(changed))
    runs = []
    if build:
        digest = ",".join(f"{k}:{current[k]}" for k in build)
        reason = "added" if set(build) <= set(added) else "changed"
        runs.append(build_request(order, build, f"build:{digest}:{tick}", reason))
    elif deleted:
        runs.append(RunRequest(run_key=f"deleted:{','.join(deleted)}:{tick}", job_name=assemble_corpus_job.name,
                               tags={"edaqa/reason": "deleted"}))
    requests = []
    if to_add:
        requests.append(AddDynamicPartitionsRequest(DOCUMENTS, to_add))
    if to_delete:
        requests.append(DeleteDynamicPartitionsRequest(DOCUMENTS, to_delete))
    if not runs and not requests:
        context.update_cursor(dump_cursor(generation, current))
        return SkipReason(f"no change in {len(current)} documents")
    return SensorResult(run_requests=runs, dynamic_partitions_requests=requests,
                        cursor=dump_cursor(tick, current))


def failed_documents(instance, run_id: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """{document key: why} of the documents a run left out (first per-document asset that
    failed them; a document that only lacked an input names the asset that failed it)."""
    found: dict[str, tuple[int, str]] = {}
    records = instance.get_records_for_run(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION,
                                           limit=1_000_000).records
    order = {name: i for i, name in enumerate(DOCUMENT_ASSETS)}
    for record in records:
        materialization = record.asset_materialization
        if materialization is None or materialization.partition is None:
            continue
        reason = materialization.metadata.get(FAILED)
        rank = order.get(materialization.asset_key.to_user_string())
        if reason is None or rank is None:
            continue
        key = materialization.partition
        if key not in found or rank < found[key][0]:
            found[key] = (rank, str(reason.value))
    return {key: reason for key, (_, reason) in sorted(found.items())}


def partial_documents(instance, run_id: str) -> dict[str, list[dict[str, Any]]]:  # type: ignore[no-untyped-def]
    """{document key: [{page, error}]} of the PDFs a run indexed without some of their pages."""
    found: dict[str, list[dict[str, Any]]] = {}
    records = instance.get_records_for_run(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION,
                                           limit=1_000_000).records
    for record in records:
        materialization = record.asset_materialization
        if materialization is None or materialization.partition is None:
            continue
        pages = materialization.metadata.get(FAILED_PAGES)
        if pages is not None and materialization.asset_key.to_user_string() == "parsed_documents":
            found[materialization.partition] = list(pages.value)
    return dict(sorted(found.items()))


@run_status_sensor(
    run_status=DagsterRunStatus.SUCCESS,
    request_job=index_document_job,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.STOPPED,
    description="A document left out of a many-document run gets its own strict run, so that "
    "its partition shows the failure (and the file) in the UI.",
)
def failed_documents_sensor(context: RunStatusSensorContext) -> list[RunRequest]:
    run = context.dagster_run
    if run.tags.get(ISOLATE_FAILURES_TAG) == "0":
        return []
    keys = set(context.instance.get_dynamic_partitions(DOCUMENTS))
    return [RunRequest(run_key=f"{run.run_id}:{key}", partition_key=key,
                       tags={ISOLATE_FAILURES_TAG: "0", "edaqa/reason": "failed in " + run.run_id[:8]})
            for key in failed_documents(context.instance, run.run_id) if key in keys]
