"""Asset-check helpers: turn the pure validation rules into Dagster check results.

Checks are declared on the assets themselves (``check_specs``) and evaluated on the value the
asset just produced, which works the same for per-document partitions and cross-document
assets. Structural checks are blocking: a failure stops downstream materialisation. The
great-expectations suite runs as a second check on the tabular outputs.

Every asset module builds its check results with ``problems_result`` (a check passes when its
rule found no problems) and its table previews with ``table_preview``, so the UI shows the
same metadata shape everywhere: ``n_problems`` and the first offenders as a Markdown list.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import polars as pl
from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetKey, MetadataValue

from edaqa_pipeline.validation.expectations import ExpectationReport, run_suite

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


def problems_result(asset: str, check_name: str, problems: Sequence[str], *, shown: int = 50,
                    **metadata: object) -> AssetCheckResult:
    """A blocking-severity result that passes iff ``problems`` is empty; metadata: the count,
    the first ``shown`` problems as a Markdown list, and any extra ``metadata``."""
    listed = "\n".join(f"- {p}" for p in problems[:shown])
    return AssetCheckResult(
        check_name=check_name,
        asset_key=AssetKey(asset),
        passed=not problems,
        severity=AssetCheckSeverity.ERROR,
        metadata={"n_problems": len(problems), "problems": MetadataValue.md(listed or "none"),
                  **metadata},  # type: ignore[dict-item]
    )


def table_preview(df: pl.DataFrame, columns: list[str], n: int = 5) -> MetadataValue:
    """The first ``n`` rows of ``columns`` as a Markdown table (cells cut at 80 characters)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in df.select(columns).head(n).to_dicts():
        cells = [str(row[c]).replace("\n", " ").replace("|", "\\|")[:80] for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return MetadataValue.md("\n".join(lines))


def structure_result(asset: str, problems: list[str]) -> AssetCheckResult:
    return problems_result(asset, STRUCTURE, problems)


def expectation_result(asset: str, df: pl.DataFrame) -> AssetCheckResult:
    return expectation_check(asset, run_suite(asset, df))


def expectation_check(asset: str, report: ExpectationReport) -> AssetCheckResult:
    """The great-expectations check result of a suite run."""
    return AssetCheckResult(
        check_name=EXPECTATIONS,
        asset_key=AssetKey(asset),
        passed=report.success,
        severity=AssetCheckSeverity.ERROR,
        metadata={"evaluated": report.evaluated, "failed": ", ".join(report.failed) or "none"},
    )


@dataclass(frozen=True)
class PendingExpectations:
    """The great-expectations check of one document's table, not yet run: a per-document
    step collects these and validates the tables of all its documents in one suite run
    (``per_document``), instead of one per document."""

    asset: str
    df: pl.DataFrame

    def result(self) -> AssetCheckResult:
        return expectation_result(self.asset, self.df)


def results(asset: str, df: pl.DataFrame, problems: list[str], *,
            expectations: bool = True) -> Iterator[AssetCheckResult | PendingExpectations]:
    """The structural check now, the expectation suite as ``PendingExpectations``."""
    yield structure_result(asset, problems)
    if expectations:
        yield PendingExpectations(asset, df)
