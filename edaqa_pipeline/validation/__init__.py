"""Structural validation of the pipeline's tables (pure functions; Dagster checks wrap them)."""
