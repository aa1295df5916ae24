"""Nightly full refresh: rebuild every document partition and the corpus, in one run.

The sensor handles changes during the day; the schedule runs ``build_index`` over the range
of every document partition once a night with ``FORCE_TAG``, so that a changed parser, model
or rule reaches every document even when no file (and no code version) changed. Failures are
isolated (``failed_documents_sensor`` then re-runs each failed document on its own).
"""


from datetime import date

from dagster import RunRequest, ScheduleEvaluationContext, schedule

from edaqa_pipeline.assets.partitions import DOCUMENTS, FORCE_TAG, ISOLATE_FAILURES_TAG
from edaqa_pipeline.jobs import build_index_job
from edaqa_pipeline.sensors import range_tags


@schedule(
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    job=build_index_job,
    description="02:00 UTC: full refresh of every document partition and the corpus (one run).",
)
def nightly_refresh(context: ScheduleEvaluationContext) -> list[RunRequest]:
    day = (context.scheduled_execution_time.date() if context.scheduled_execution_time else date.today()).isoformat()
    keys = list(context.instance.get_dynamic_partitions(DOCUMENTS))
    if not keys:
        return []
    return [RunRequest(run_key=f"nightly:{day}", job_name=build_index_job.name,
                       tags={**range_tags(keys, keys), ISOLATE_FAILURES_TAG: "1", FORCE_TAG: "1",
                             "edaqa/reason": "nightly", "edaqa/documents": str(len(keys))})]
