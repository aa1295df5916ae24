"""A cross-document table whose blocking check failed is stale: the IO manager had written it
before the check ran, and the next ``edaqa index`` must build it again rather than call the
corpus up to date."""

from __future__ import annotations

from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetCheckSeverity,
    AssetKey,
    DagsterInstance,
)

from edaqa_pipeline.assets.document_state import failed_check

KEY = AssetCheckKey(AssetKey("hardware_kgs"), "no_property_outside_block")
OTHER = AssetCheckKey(AssetKey("chunk_index"), "rows_match_chunks")


def _report(instance: DagsterInstance, key: AssetCheckKey, passed: bool,
            severity: AssetCheckSeverity = AssetCheckSeverity.ERROR) -> None:
    instance.report_runless_asset_event(AssetCheckEvaluation(
        asset_key=key.asset_key, check_name=key.name, passed=passed, severity=severity))


def test_the_latest_failed_error_check_names_the_asset_and_a_pass_clears_it() -> None:
    with DagsterInstance.ephemeral() as instance:
        assert failed_check(instance, [KEY, OTHER]) is None  # never evaluated
        _report(instance, OTHER, passed=False, severity=AssetCheckSeverity.WARN)
        assert failed_check(instance, [KEY, OTHER]) is None  # a warning does not rebuild
        _report(instance, KEY, passed=False)
        assert failed_check(instance, [KEY, OTHER]) == "hardware_kgs: check no_property_outside_block failed"
        _report(instance, KEY, passed=True)
        assert failed_check(instance, [KEY, OTHER]) is None
