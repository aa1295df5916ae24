"""Asset-check helpers: turn the pure validation rules into Dagster check results.

Checks are declared on the assets themselves (``check_specs``) and evaluated on the value the
asset just produced, which works the same for per-document partitions and cross-document
assets. Structural checks are blocking: a failure stops downstream materialisation. The
great-expectations suite runs as a second check on the tabular outputs.
"""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl
from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetKey

from edaqa_pipeline.validation.expectations import run_suite

STRUCTURE = "structurally_valid"
EXPECTATIONS = "great_expectations_suite"


def check_specs(asset: str, *, expectations: bool = True) -> list[AssetCheckSpec]:
    specs = [
        AssetCheckSpec(
            STRUCTURE,
            asset=asset,
            blocking=True,
            description="ids unique, spans inside the document, labels in the schema, no empty content",
        )
    ]
    if expectations:
        specs.append(
            AssetCheckSpec(
                EXPECTATIONS,
                asset=asset,
                blocking=True,
                description="great-expectations suite on the table (non-null/unique ids, label sets)",
            )
        )
    return specs


def structure_result(asset: str, problems: list[str]) -> AssetCheckResult:
    return AssetCheckResult(
        check_name=STRUCTURE,
        asset_key=AssetKey(asset),
        passed=not problems,
        severity=AssetCheckSeverity.ERROR,
        metadata={"problems": "\n".join(problems) or "none", "n_problems": len(problems)},
    )


def expectation_result(asset: str, df: pl.DataFrame) -> AssetCheckResult:
    report = run_suite(asset, df)
    return AssetCheckResult(
        check_name=EXPECTATIONS,
        asset_key=AssetKey(asset),
        passed=report.success,
        severity=AssetCheckSeverity.ERROR,
        metadata={"evaluated": report.evaluated, "failed": ", ".join(report.failed) or "none"},
    )


def results(asset: str, df: pl.DataFrame, problems: list[str], *, expectations: bool = True) -> Iterator[AssetCheckResult]:
    yield structure_result(asset, problems)
    if expectations:
        yield expectation_result(asset, df)
