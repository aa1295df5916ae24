"""The corpus sensor: keeps the ``documents`` partitions in step with the corpus folder.

Each tick hashes every document (SHA-256 of its bytes) and compares with the JSON cursor of
the previous tick: new files add a partition and request its run, changed files request a run
(``run_key`` = key + content hash, so the same content is never indexed twice), deleted files
delete the partition and request the cross-document job so their units and index rows
disappear. The cross-document assets otherwise follow by their automation condition.
"""


import json

from dagster import (
    AddDynamicPartitionsRequest,
    DefaultSensorStatus,
    DeleteDynamicPartitionsRequest,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from edaqa_pipeline.assets.partitions import DOCUMENTS
from edaqa_pipeline.corpus.scan import scan_corpus
from edaqa_pipeline.jobs import assemble_corpus_job, index_document_job
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


@sensor(
    jobs=[index_document_job, assemble_corpus_job],
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.STOPPED,
    description="Adds/deletes document partitions and requests runs for new or changed files.",
)
def corpus_sensor(context: SensorEvaluationContext, settings: PipelineSettings) -> SensorResult | SkipReason:
    cfg = settings.settings()
    files, refused = scan_corpus(cfg.corpus_root)
    for name, problem in refused:
        context.log.warning(f"refused {name}: {problem}")
    current = {f.key: f.sha256 for f in files}
    generation, previous = load_cursor(context.cursor)
    # run_keys carry the tick's generation: the daemon skips a run_key it has seen, so a
    # reverted, re-added or re-deleted file must never reuse one. A tick retried after a crash
    # (cursor not committed) reuses its generation, so it is still deduplicated.
    tick = generation + 1
    existing = set(context.instance.get_dynamic_partitions(DOCUMENTS))
    added, changed, deleted = corpus_changes(previous, current)
    to_add = sorted(k for k in current if k not in existing)
    to_delete = sorted(k for k in deleted if k in existing)
    runs = [
        RunRequest(run_key=f"{key}:{current[key]}:{tick}", partition_key=key, job_name=index_document_job.name,
                   tags={"edaqa/reason": "added" if key in added else "changed"})
        for key in sorted(set(added) | set(changed))
    ]
    if deleted:
        digest = ",".join(deleted)
        runs.append(RunRequest(run_key=f"deleted:{digest}:{tick}", job_name=assemble_corpus_job.name,
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
