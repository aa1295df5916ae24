"""Nightly full refresh: re-index every document partition.

The sensor handles changes during the day; the schedule re-runs every document once a night
so that a changed parser, model or rule reaches every document even when no file changed.
The cross-document assets follow through their automation condition (their deps updated).
"""


from datetime import date

from dagster import RunRequest, ScheduleEvaluationContext, schedule

from edaqa_pipeline.assets.partitions import DOCUMENTS
from edaqa_pipeline.jobs import index_document_job


@schedule(
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    job=index_document_job,
    description="02:00 UTC: full refresh of every document partition.",
)
def nightly_refresh(context: ScheduleEvaluationContext) -> list[RunRequest]:
    day = (context.scheduled_execution_time.date() if context.scheduled_execution_time else date.today()).isoformat()
    keys = sorted(context.instance.get_dynamic_partitions(DOCUMENTS))
    requests = [
        RunRequest(run_key=f"nightly:{day}:{key}", partition_key=key, job_name=index_document_job.name,
                   tags={"edaqa/reason": "nightly"})
        for key in keys
    ]
    return requests
