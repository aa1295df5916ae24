"""The Dagster code location: assets, checks, resources, jobs, sensor, schedule, executor.

``build_definitions(settings)`` makes the Definitions for any corpus/storage (the CLI and
tests call it); the module-level ``defs`` is what ``dagster dev`` / ``workspace.yaml`` load,
configured from the environment (``EDAQA_CORPUS``, ``EDAQA_STORAGE``, ...).

Executor by configuration (``EDAQA_EXECUTOR``): ``multiprocess`` (default, bounded by
``EDAQA_MAX_CONCURRENT``, default 2) or ``in_process``; see docs/deploy.md for celery / k8s.
"""

from __future__ import annotations

import os

from dagster import (
    AssetSelection,
    AutomationConditionSensorDefinition,
    Definitions,
    ExecutorDefinition,
    in_process_executor,
    load_assets_from_modules,
    multiprocess_executor,
)
from dagster_polars import PolarsParquetIOManager

from edaqa_pipeline.assets import documents, evaluation, indexes, units
from edaqa_pipeline.jobs import assemble_corpus_job, corpus_selection, evaluate_job, index_document_job
from edaqa_pipeline.resources import LLMResource
from edaqa_pipeline.schedules import nightly_refresh
from edaqa_pipeline.sensors import corpus_sensor
from edaqa_pipeline.settings import Settings
from edaqa_pipeline.settings_resource import PipelineSettings


def executor_from_env() -> ExecutorDefinition:
    kind = os.environ.get("EDAQA_EXECUTOR", "multiprocess").strip().lower()
    if kind == "in_process":
        return in_process_executor
    if kind == "multiprocess":
        limit = int(os.environ.get("EDAQA_MAX_CONCURRENT", "2"))
        return multiprocess_executor.configured({"max_concurrent": limit})
    raise ValueError(f"EDAQA_EXECUTOR must be in_process or multiprocess, got {kind!r}")


def build_definitions(settings: Settings | None = None, *, executor: ExecutorDefinition | None = None) -> Definitions:
    cfg = settings or Settings.from_env()
    all_assets = load_assets_from_modules([documents, units, indexes, evaluation])
    return Definitions(
        assets=all_assets,
        jobs=[index_document_job, assemble_corpus_job, evaluate_job],
        sensors=[
            corpus_sensor,
            AutomationConditionSensorDefinition(
                "corpus_automation_sensor", target=corpus_selection | AssetSelection.assets("eval_reports"), minimum_interval_seconds=60
            ),
        ],
        schedules=[nightly_refresh],
        resources={
            "settings": PipelineSettings(
                corpus_root=str(cfg.corpus_root),
                storage_root=str(cfg.storage_root),
                lancedb_uri=cfg.lancedb_uri,
                encoder_path=cfg.encoder_path,
                anchor_cap=cfg.anchor_cap,
            ),
            "llm": LLMResource(cache_dir=str(cfg.llm_cache_dir)),
            "io_manager": PolarsParquetIOManager(base_dir=str(cfg.tables_dir)),
        },
        executor=executor or executor_from_env(),
    )


defs = build_definitions()
