"""The nightly schedule, evaluated like the scheduler would. No run is executed here: the
tests check what is requested, not the indexing itself.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from dagster import DagsterInstance, RunRequest, build_schedule_context

from edaqa_pipeline.assets.partitions import DOCUMENTS, FORCE_TAG, ISOLATE_FAILURES_TAG
from edaqa_pipeline.schedules import nightly_refresh
from edaqa_pipeline_tests._helpers_sensor import _range, _repository

# --- the nightly schedule --------------------------------------------------------------------


def _evaluate_schedule(instance: DagsterInstance, when: datetime) -> list[RunRequest]:
    context = build_schedule_context(instance=instance, scheduled_execution_time=when)
    result: Any = nightly_refresh(context)
    return list(result)


def test_nightly_refresh_requests_one_run_over_every_partition(persistent_instance):
    persistent_instance.add_dynamic_partitions(DOCUMENTS, ["b.md", "a.md"])
    when = datetime(2026, 11, 29, 2, 0, tzinfo=UTC)
    (request,) = _evaluate_schedule(persistent_instance, when)
    assert request.job_name == "build_index"
    assert _range(request) == ("b.md", "a.md")  # the instance's partition order
    assert request.tags["edaqa/reason"] == "nightly"
    assert request.tags[FORCE_TAG] == "1" and request.tags[ISOLATE_FAILURES_TAG] == "1"
    assert request.run_key == "nightly:2026-11-29"


def test_nightly_refresh_run_keys_are_deterministic_per_day(persistent_instance):
    persistent_instance.add_dynamic_partitions(DOCUMENTS, ["a.md", "b.md"])
    day = datetime(2026, 11, 29, 2, 0, tzinfo=UTC)
    again = _evaluate_schedule(persistent_instance, day.replace(minute=3))
    first = _evaluate_schedule(persistent_instance, day)
    assert [r.run_key for r in first] == [r.run_key for r in again]
    next_day = _evaluate_schedule(persistent_instance, datetime(2026, 11, 30, 2, 0, tzinfo=UTC))
    assert all("2026-11-30" in r.run_key for r in next_day)
    assert not {r.run_key for r in first} & {r.run_key for r in next_day}


def test_nightly_refresh_follows_partition_deletes(persistent_instance):
    persistent_instance.add_dynamic_partitions(DOCUMENTS, ["a.md", "b.md", "c.md"])
    persistent_instance.delete_dynamic_partition(DOCUMENTS, "c.md")
    (request,) = _evaluate_schedule(persistent_instance, datetime(2026, 11, 29, 2, 0, tzinfo=UTC))
    assert _range(request) == ("a.md", "b.md")


def test_nightly_refresh_without_partitions_requests_nothing(persistent_instance):
    assert _evaluate_schedule(persistent_instance, datetime(2026, 11, 29, 2, 0, tzinfo=UTC)) == []


def test_nightly_refresh_tick_validates(persistent_instance, tmp_path):
    """evaluate_tick checks the partition keys exist for the job, as the scheduler does."""
    persistent_instance.add_dynamic_partitions(DOCUMENTS, ["a.md"])
    context = build_schedule_context(
        instance=persistent_instance,
        scheduled_execution_time=datetime(2026, 11, 29, 2, 0, tzinfo=UTC),
        repository_def=_repository(tmp_path),
    )
    data = nightly_refresh.evaluate_tick(context)
    assert [_range(r) for r in data.run_requests or []] == [("a.md", "a.md")]
