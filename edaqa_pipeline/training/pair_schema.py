"""Constants and the table schema of the training pairs."""

from __future__ import annotations

import polars as pl

TASK = "training_queries"
TRAIN_FRACTION = 0.85
DEFAULT_PER_UNIT = 4  # unit-level template queries per unit
DEFAULT_ROWS_PER_UNIT = 4  # row-level queries per unit (table rows, diagnostics, steps)

PAIRS_SCHEMA: dict[str, pl.DataType] = {
    "query_id": pl.String(),
    "query": pl.String(),
    "form": pl.String(),
    "required_types": pl.List(pl.String()),
    "unit_id": pl.String(),  # the positive unit e+
    "unit_types": pl.List(pl.String()),  # T(e+)
    "split_group": pl.String(),
    "split": pl.String(),  # train | val
    "source": pl.String(),  # template | llm
}
