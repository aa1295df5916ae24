"""The Dagster code location: assets, checks, resources, jobs, sensor, schedule, executor.

``build_definitions(settings)`` makes the Definitions for any corpus/storage (the CLI and
tests call it); the module-level ``defs`` is what ``dagster dev`` / ``workspace.yaml`` load,
configured from the environment (``EDAQA_CORPUS``, ``EDAQA_STORAGE``, ...).

Executor by configuration (``EDAQA_EXECUTOR``): ``multiprocess`` (default, bounded by
``EDAQA_MAX_CONCURRENT``, default 2) or ``in_process``; see docs/deploy.md for celery / k8s.
"""

from __future__ import annotations

import importlib
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

from edaqa_pipeline.assets import (
    chipkg,
    datasheets,
    documents,
    elements,
    evaluation,
    indexes,
    releases,
    training,
    units,
)
from edaqa_pipeline.assets.io_manager import CorpusParquetIOManager
from edaqa_pipeline.jobs import (
    assemble_corpus_job,
    build_chip_kg_job,
    build_element_graph_job,
    build_index_job,
    corpus_selection,
    evaluate_job,
    index_document_job,
    train_encoder_job,
)
from edaqa_pipeline.resources import LLMResource, PipelineSettings
from edaqa_pipeline.schedules import nightly_refresh
from edaqa_pipeline.sensors import corpus_sensor, failed_documents_sensor
from edaqa_pipeline.settings import Settings

EXECUTORS = ("in_process", "multiprocess", "celery", "k8s")
DEFAULT_CELERY_BROKER = "redis://127.0.0.1:6379/0"


def _optional_executor(kind: str, module: str, attribute: str, package: str) -> ExecutorDefinition:
    """``module.attribute`` of an optional package, with an error naming what to install."""
    try:
        imported = importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"EDAQA_EXECUTOR={kind} needs the {package} package, which is not installed "
            f"({exc}); install it with `pip install {package}` at the version matching dagster "
            f"(see docs/deploy.md), or pick EDAQA_EXECUTOR=multiprocess|in_process"
        ) from exc
    return getattr(imported, attribute)


def executor_from_env() -> ExecutorDefinition:
    """The executor named by ``EDAQA_EXECUTOR`` (default ``multiprocess``); docs/deploy.md.

    - ``in_process``: every step in the run worker process.
    - ``multiprocess``: one process per step, at most ``EDAQA_MAX_CONCURRENT`` (default 2).
    - ``celery``: steps are queued on a Celery broker (``EDAQA_CELERY_BROKER``, default
      ``redis://127.0.0.1:6379/0``; results on ``EDAQA_CELERY_BACKEND``, default the broker)
      and run by ``dagster-celery`` workers; needs ``dagster-celery`` and a persistent instance.
    - ``k8s``: one Kubernetes Job per step (``dagster-k8s``'s ``k8s_job_executor``), bounded
      by ``EDAQA_MAX_CONCURRENT``; the image, namespace and env come from the run launcher.

    ``celery`` and ``k8s`` import their package only when selected.
    """
    kind = os.environ.get("EDAQA_EXECUTOR", "multiprocess").strip().lower()
    if kind == "in_process":
        return in_process_executor
    if kind == "multiprocess":
        limit = int(os.environ.get("EDAQA_MAX_CONCURRENT", "2"))
        return multiprocess_executor.configured({"max_concurrent": limit})
    if kind == "celery":
        celery_executor = _optional_executor(kind, "dagster_celery", "celery_executor", "dagster-celery")
        broker = os.environ.get("EDAQA_CELERY_BROKER", "").strip() or DEFAULT_CELERY_BROKER
        backend = os.environ.get("EDAQA_CELERY_BACKEND", "").strip() or broker
        return celery_executor.configured({"broker": broker, "backend": backend})
    if kind == "k8s":
        k8s_job_executor = _optional_executor(kind, "dagster_k8s", "k8s_job_executor", "dagster-k8s")
        limit = int(os.environ.get("EDAQA_MAX_CONCURRENT", "0"))
        return k8s_job_executor.configured({"max_concurrent": limit}) if limit > 0 else k8s_job_executor
    raise ValueError(f"EDAQA_EXECUTOR must be one of {', '.join(EXECUTORS)}, got {kind!r}")


def build_definitions(settings: Settings | None = None, *, executor: ExecutorDefinition | None = None) -> Definitions:
    cfg = settings or Settings.from_env()
    all_assets = load_assets_from_modules(
        [documents, units, indexes, evaluation, datasheets, chipkg, elements, training, releases]
    )
    return Definitions(
        assets=all_assets,
        jobs=[build_index_job, index_document_job, assemble_corpus_job, evaluate_job, build_chip_kg_job,
              build_element_graph_job, train_encoder_job],
        sensors=[
            corpus_sensor,
            failed_documents_sensor,
            AutomationConditionSensorDefinition(
                "corpus_automation_sensor", target=corpus_selection | AssetSelection.assets(
                    "eval_reports", "chip_kg_nodes", "chip_kg_triples", "element_graph"), minimum_interval_seconds=60
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
            "io_manager": CorpusParquetIOManager(base_dir=str(cfg.tables_dir)),
        },
        executor=executor or executor_from_env(),
    )


defs = build_definitions()
