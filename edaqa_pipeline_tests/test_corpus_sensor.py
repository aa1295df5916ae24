"""The corpus sensor, evaluated like the daemon would (the failed-documents sensor:
test_index_batch.py; the nightly schedule: test_nightly_schedule.py).

Each tick builds a fresh sensor context on one instance with the cursor of the previous tick,
then applies the returned dynamic-partition requests to the instance (what the daemon does
before launching the runs), so the next tick sees the partitions the previous one asked for.
No run is executed here: the tests check what is requested, not the indexing itself.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from dagster import (
    AddDynamicPartitionsRequest,
    DagsterInstance,
    DeleteDynamicPartitionsRequest,
    RunRequest,
    SensorResult,
    SkipReason,
    build_sensor_context,
)
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from edaqa_pipeline.assets.partitions import DOCUMENTS, ISOLATE_FAILURES_TAG
from edaqa_pipeline.sensors import corpus_changes, corpus_sensor, range_tags
from edaqa_pipeline_tests._helpers_sensor import _range, _repository
from edaqa_pipeline_tests.dagster_fixtures import (
    DOC_A,
    DOC_B,
    DOC_C,
    make_settings,
    offline_environment,
    pipeline_settings,
    write_corpus,
)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cursor_documents(cursor: str | None) -> dict[str, str]:
    """The {key: sha256} of a cursor (also accepts a {"documents": {...}} envelope)."""
    data = json.loads(cursor) if cursor else {}
    return data["documents"] if isinstance(data.get("documents"), dict) else data


class SensorDriver:
    """Evaluates ``corpus_sensor`` tick after tick on one instance, like the daemon."""

    def __init__(self, corpus: Path, storage: Path, instance: DagsterInstance) -> None:
        self.instance = instance
        self.resources = {"settings": pipeline_settings(make_settings(corpus, storage))}
        self.cursor: str | None = None
        self.run_keys: list[str] = []

    def tick(self) -> SensorResult | SkipReason:
        context = build_sensor_context(
            instance=self.instance, cursor=self.cursor, resources=self.resources
        )
        result = corpus_sensor(context)
        if isinstance(result, SensorResult):
            for request in result.dynamic_partitions_requests or []:
                if isinstance(request, AddDynamicPartitionsRequest):
                    self.instance.add_dynamic_partitions(
                        request.partitions_def_name, list(request.partition_keys)
                    )
                elif isinstance(request, DeleteDynamicPartitionsRequest):
                    for key in request.partition_keys:
                        self.instance.delete_dynamic_partition(request.partitions_def_name, key)
            if result.cursor is not None:
                self.cursor = result.cursor
            self.run_keys += [r.run_key for r in result.run_requests or [] if r.run_key]
        elif context.cursor_updated:
            self.cursor = context.cursor
        return result

    def partitions(self) -> set[str]:
        return set(self.instance.get_dynamic_partitions(DOCUMENTS))


def _runs(result: SensorResult | SkipReason) -> list[RunRequest]:
    assert isinstance(result, SensorResult), result
    return list(result.run_requests or [])


def _partition_requests(result: SensorResult, kind: type) -> list[str]:
    keys: list[str] = []
    for request in result.dynamic_partitions_requests or []:
        if isinstance(request, kind):
            assert request.partitions_def_name == DOCUMENTS
            keys += list(request.partition_keys)
    return sorted(keys)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus", {"a.md": DOC_A, "b.md": DOC_B})


@pytest.fixture
def driver(tmp_path: Path, corpus: Path):  # type: ignore[no-untyped-def]
    with offline_environment():
        instance = DagsterInstance.ephemeral()
        try:
            yield SensorDriver(corpus, tmp_path / "storage", instance)
        finally:
            instance.dispose()


# --- corpus_changes (pure) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("previous", "current", "expected"),
    [
        ({}, {}, ([], [], [])),
        ({}, {"b.md": "2", "a.md": "1"}, (["a.md", "b.md"], [], [])),
        ({"a.md": "1"}, {"a.md": "1"}, ([], [], [])),
        ({"a.md": "1", "b.md": "2"}, {"a.md": "9", "b.md": "2"}, ([], ["a.md"], [])),
        ({"a.md": "1", "b.md": "2"}, {}, ([], [], ["a.md", "b.md"])),
        (
            {"a.md": "1", "b.md": "2", "c.md": "3"},
            {"b.md": "2", "c.md": "30", "d.md": "4", "0.md": "0"},
            (["0.md", "d.md"], ["c.md"], ["a.md"]),
        ),
        # A rename is a delete plus an add (same content, new key).
        ({"old/x.md": "1"}, {"new/x.md": "1"}, (["new/x.md"], [], ["old/x.md"])),
    ],
    ids=["empty", "all-new", "unchanged", "one-changed", "all-deleted", "mixed", "rename"],
)
def test_corpus_changes(previous, current, expected):
    assert corpus_changes(previous, current) == expected


def test_corpus_changes_does_not_mutate_its_inputs():
    previous, current = {"a.md": "1"}, {"b.md": "2"}
    corpus_changes(previous, current)
    assert previous == {"a.md": "1"} and current == {"b.md": "2"}


# --- the sensor, tick by tick ----------------------------------------------------------------


def test_range_tags_cover_the_keys_in_partition_order():
    order = ["c.md", "a.md", "d.md", "b.md"]
    assert range_tags(order, ["b.md", "a.md"]) == {
        ASSET_PARTITION_RANGE_START_TAG: "a.md", ASSET_PARTITION_RANGE_END_TAG: "b.md"}
    assert range_tags(order, ["d.md"]) == {
        ASSET_PARTITION_RANGE_START_TAG: "d.md", ASSET_PARTITION_RANGE_END_TAG: "d.md"}


def test_first_tick_adds_partitions_and_requests_one_run_for_all_documents(driver, corpus):
    result = driver.tick()
    assert isinstance(result, SensorResult)
    assert _partition_requests(result, AddDynamicPartitionsRequest) == ["a.md", "b.md"]
    assert _partition_requests(result, DeleteDynamicPartitionsRequest) == []
    (run,) = _runs(result)
    assert run.job_name == "build_index"
    assert _range(run) == ("a.md", "b.md")
    assert run.tags[ISOLATE_FAILURES_TAG] == "1"
    assert run.tags["edaqa/reason"] == "added"
    for key in ("a.md", "b.md"):
        assert f"{key}:{sha(corpus / key)}" in run.run_key
    assert cursor_documents(result.cursor) == {
        "a.md": sha(corpus / "a.md"),
        "b.md": sha(corpus / "b.md"),
    }
    assert driver.partitions() == {"a.md", "b.md"}


def test_ticks_validate_against_the_repository(persistent_instance, corpus, tmp_path):
    """evaluate_tick applies the daemon's checks (job names, partition keys of the job)."""
    repo = _repository(tmp_path)
    driver = SensorDriver(corpus, tmp_path / "storage", persistent_instance)
    # With an instance_ref the context resolves partition keys against the instance plus the
    # tick's own AddDynamicPartitionsRequest, as the daemon does.
    context = build_sensor_context(
        instance=driver.instance, instance_ref=driver.instance.get_ref(), cursor=None,
        resources=driver.resources, repository_def=repo,
    )  # fmt: skip
    data = corpus_sensor.evaluate_tick(context)
    (run,) = data.run_requests or []
    assert run.job_name == "build_index" and _range(run) == ("a.md", "b.md")
    driver.tick()
    (corpus / "b.md").unlink()
    context = build_sensor_context(
        instance=driver.instance, instance_ref=driver.instance.get_ref(), cursor=driver.cursor,
        resources=driver.resources, repository_def=repo,
    )  # fmt: skip
    data = corpus_sensor.evaluate_tick(context)
    assert [(r.job_name, r.partition_key) for r in data.run_requests or []] == [
        ("assemble_corpus", None)
    ]
    assert data.cursor is not None


def test_second_tick_without_change_skips(driver):
    first = driver.tick()
    assert isinstance(first, SensorResult)
    second = driver.tick()
    assert isinstance(second, SkipReason)
    assert "2 documents" in (second.skip_message or "")
    assert cursor_documents(driver.cursor) == cursor_documents(first.cursor)
    assert driver.partitions() == {"a.md", "b.md"}


def test_modified_file_requests_one_run_with_a_new_run_key(driver, corpus):
    (first,) = _runs(driver.tick())
    (corpus / "a.md").write_text(
        DOC_A + "\nOne more paragraph about placement.\n", encoding="utf-8"
    )
    result = driver.tick()
    runs = _runs(result)
    assert [_range(r) for r in runs] == [("a.md", "a.md")]
    assert runs[0].job_name == "build_index"
    assert runs[0].run_key != first.run_key
    assert sha(corpus / "a.md") in runs[0].run_key
    assert runs[0].tags["edaqa/reason"] == "changed"
    assert result.dynamic_partitions_requests in (None, [])
    assert cursor_documents(result.cursor)["a.md"] == sha(corpus / "a.md")
    assert cursor_documents(result.cursor)["b.md"] == sha(corpus / "b.md")
    assert isinstance(driver.tick(), SkipReason)


def test_touch_without_content_change_requests_nothing(driver, corpus):
    driver.tick()
    path = corpus / "a.md"
    path.write_bytes(path.read_bytes())
    os.utime(path, (1_000_000_000, 1_000_000_000))
    assert isinstance(driver.tick(), SkipReason)


def test_added_file_adds_its_partition_and_one_run(driver, corpus):
    driver.tick()
    (corpus / "sub").mkdir()
    (corpus / "sub" / "c.md").write_text(DOC_C, encoding="utf-8")
    result = driver.tick()
    assert _partition_requests(result, AddDynamicPartitionsRequest) == ["sub/c.md"]
    runs = _runs(result)
    assert [(_range(r), r.job_name) for r in runs] == [(("sub/c.md", "sub/c.md"), "build_index")]
    assert sha(corpus / "sub" / "c.md") in runs[0].run_key
    assert runs[0].tags["edaqa/reason"] == "added"
    assert driver.partitions() == {"a.md", "b.md", "sub/c.md"}


def test_deleted_file_deletes_its_partition_and_requests_assemble(driver, corpus):
    driver.tick()
    (corpus / "b.md").unlink()
    result = driver.tick()
    assert _partition_requests(result, DeleteDynamicPartitionsRequest) == ["b.md"]
    assert _partition_requests(result, AddDynamicPartitionsRequest) == []
    runs = _runs(result)
    assert len(runs) == 1
    assert runs[0].job_name == "assemble_corpus"
    assert runs[0].partition_key is None
    assert runs[0].run_key and "b.md" in runs[0].run_key
    assert runs[0].tags["edaqa/reason"] == "deleted"
    assert cursor_documents(result.cursor) == {"a.md": sha(corpus / "a.md")}
    assert driver.partitions() == {"a.md"}
    assert isinstance(driver.tick(), SkipReason)


def test_partition_missing_from_instance_is_added_again(driver, corpus):
    """A partition deleted behind the sensor's back (UI, CLI) is re-added, without a run."""
    driver.tick()
    driver.instance.delete_dynamic_partition(DOCUMENTS, "a.md")
    result = driver.tick()
    assert isinstance(result, SensorResult)
    assert _partition_requests(result, AddDynamicPartitionsRequest) == ["a.md"]
    assert _runs(result) == []
    assert driver.partitions() == {"a.md", "b.md"}


def test_symlink_outside_the_corpus_is_never_requested(tmp_path, corpus, driver):
    outside = write_corpus(
        tmp_path / "outside", {"secret.md": "# Secret\n\nnot part of the corpus\n"}
    )
    (corpus / "link.md").symlink_to(outside / "secret.md")
    (corpus / "linkdir").symlink_to(outside, target_is_directory=True)
    result = driver.tick()
    requested = [_range(r) for r in _runs(result)]
    added = _partition_requests(result, AddDynamicPartitionsRequest)
    assert requested == [("a.md", "b.md")]
    assert not any("link" in r.run_key or "secret" in r.run_key for r in _runs(result))
    assert added == ["a.md", "b.md"]
    assert not any("link" in key or "secret" in key for key in cursor_documents(result.cursor))
    assert driver.partitions() == {"a.md", "b.md"}


def test_ignored_files_are_not_documents(driver, corpus):
    write_corpus(corpus, {
        ".hidden.md": DOC_C, ".git/notes.md": DOC_C, "LICENSE.md": "MIT\n",
        "notes.txt": "plain text\n", "image.png": b"\x89PNG\r\n",
    })  # fmt: skip
    result = driver.tick()
    (run,) = _runs(result)
    assert _range(run) == ("a.md", "b.md") and run.tags["edaqa/documents"] == "2"


def test_revert_to_an_earlier_version_gets_a_fresh_run_key(driver, corpus):
    driver.tick()
    original = (corpus / "a.md").read_text(encoding="utf-8")
    (corpus / "a.md").write_text(original + "\nEdited.\n", encoding="utf-8")
    assert len(_runs(driver.tick())) == 1
    (corpus / "a.md").write_text(original, encoding="utf-8")
    runs = _runs(driver.tick())
    assert [_range(r) for r in runs] == [("a.md", "a.md")]
    assert runs[0].run_key not in driver.run_keys[:-1]


def test_delete_readd_delete_cycle_gets_fresh_run_keys(driver, corpus):
    driver.tick()
    content = (corpus / "a.md").read_bytes()
    seen: list[str] = list(driver.run_keys)
    for step in ("delete", "readd", "delete"):
        if step == "delete":
            (corpus / "a.md").unlink()
        else:
            (corpus / "a.md").write_bytes(content)
        runs = _runs(driver.tick())
        assert runs, step
        for run in runs:
            assert run.run_key not in seen, (step, run.run_key)
            seen.append(run.run_key)
