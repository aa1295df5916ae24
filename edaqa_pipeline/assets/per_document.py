"""Per-document assets: one Dagster step builds many documents, each document failing alone.

``document_asset`` turns a function written for ONE document (it receives the document's
input frames, yields ``Output(frame, metadata)`` and its check results, or raises) into a
``documents``-partitioned asset with ``BackfillPolicy.single_run()``: a UI backfill, a sensor
request and ``edaqa index`` all build every selected document in one run, one step per asset,
instead of one run per document (``batch=True``: the function gets every document of the step
at once, e.g. to encode all their texts in one batch).

Within a step each document key is

* reused: its latest materialisation has the fingerprint the document has now (code version,
  settings, op config, the fingerprints of its per-document inputs; the source file for the
  first asset) and its table is stored: nothing is read or recomputed, the stored table is
  kept (``KEEP_STORED``) and the previous metadata repeated;
* computed: the function runs; all frames go to the IO manager as one output;
* failed: the function raised, an input of the document is missing (it failed upstream), or
  one of its blocking checks found problems: the document is left out of the output, so the
  IO manager removes its stored table (no stale rows are served), and its partition's
  metadata says why (``edaqa/failed``).

Dagster cannot fail single partitions of a multi-partition step (dagster issue #17836), so a
run of several documents (or tagged ``ISOLATE_FAILURES_TAG``) isolates failures as above and
reports them in metadata and in its checks (severity WARN: the other documents go on). A run
of one document is strict: the step fails as a normal Dagster step, with the message naming
the file, which is how a failure shows on its partition in the UI (``edaqa index`` and the
``failed_documents_sensor`` re-run each failed document that way). A failure hook then removes
the document's stored tables of the asset and of every per-document asset downstream (their
steps were skipped), through the IO manager.
"""

from __future__ import annotations

import inspect
import time
import typing
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetsDefinition,
    BackfillPolicy,
    BetaWarning,
    Config,
    Failure,
    MetadataValue,
    Output,
    ResourceParam,
    asset,
)

from edaqa_pipeline.assets import document_state as state
from edaqa_pipeline.assets import progress
from edaqa_pipeline.assets.dagster_compat import is_resource_annotation
from edaqa_pipeline.assets.document_specs import (
    IO_PARAM,
    SETTINGS_PARAM,
    SPECS,
    DocumentAssetSpec,
    DocumentResult,
    drop_stale_document_rows,
)
from edaqa_pipeline.assets.io_manager import KEEP_STORED, PER_DOCUMENT_INPUT, CorpusParquetIOManager
from edaqa_pipeline.assets.partitions import FORCE_TAG, ISOLATE_FAILURES_TAG, documents_partitions
from edaqa_pipeline.checks import PendingExpectations, expectation_check
from edaqa_pipeline.resources import PipelineSettings
from edaqa_pipeline.storage.tables import compact
from edaqa_pipeline.validation.expectations import run_suite

SHOWN = 50  # failed documents listed in a check's metadata


class DocumentContext:
    """The step's context as a function written for one document (or a batch) sees it."""

    def __init__(self, context: AssetExecutionContext, keys: list[str]) -> None:
        self._context = context
        self.partition_keys = keys

    @property
    def partition_key(self) -> str:
        (key,) = self.partition_keys
        return key

    @property
    def has_partition_key(self) -> bool:
        return len(self.partition_keys) == 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def _roles(fn: Callable[..., Any]) -> tuple[bool, list[str], list[inspect.Parameter]]:
    """(takes context, input parameter names, resource/config parameters) of ``fn``."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except NameError:
        hints = {}
    takes_context, inputs, passthrough = False, [], []
    for name, param in inspect.signature(fn).parameters.items():
        annotation = hints.get(name, param.annotation)
        if name in ("context", "_context"):
            takes_context = True
        elif (isinstance(annotation, type) and issubclass(annotation, Config)) or is_resource_annotation(annotation):
            passthrough.append(param.replace(annotation=annotation))
        else:
            inputs.append(name)
    return takes_context, inputs, passthrough


def document_asset(*, code_version: str, batch: bool = False,
                   source: Callable[[PipelineSettings, str], str] | None = None,
                   ins: Mapping[str, AssetIn] | None = None, **asset_kwargs: Any
                   ) -> Callable[[Callable[..., Any]], AssetsDefinition]:
    """``@asset`` for a per-document asset (see the module docstring); ``asset_kwargs`` go to
    ``@asset`` (group_name, kinds, check_specs, pool, description, ...). ``source(settings,
    key)`` gives the content hash of an asset without per-document inputs (its source file)."""

    def decorate(fn: Callable[..., Any]) -> AssetsDefinition:
        name = asset_kwargs.pop("name", None) or fn.__name__
        takes_context, input_names, passthrough = _roles(fn)
        given = dict(ins or {})
        asset_ins = {}
        for param in input_names:
            base = given.get(param) or AssetIn()
            asset_ins[param] = AssetIn(key=base.key or AssetKey(param), metadata={
                **(base.metadata or {}), "allow_missing_partitions": True, PER_DOCUMENT_INPUT: True})
        parents = {p: asset_ins[p].key.to_user_string() for p in input_names}  # type: ignore[union-attr]
        taken = {p.name for p in passthrough}
        extra = []
        if SETTINGS_PARAM not in taken:
            extra.append(inspect.Parameter(SETTINGS_PARAM, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                           annotation=PipelineSettings))
        if IO_PARAM not in taken:
            extra.append(inspect.Parameter(IO_PARAM, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                           annotation=ResourceParam[CorpusParquetIOManager]))
        spec = DocumentAssetSpec(name, code_version, fn, parents, tuple(sorted(taken)), takes_context,
                                 batch, "llm" in taken, source)
        SPECS[name] = spec

        def step(context: AssetExecutionContext, **kwargs: Any) -> Iterator[Any]:
            yield from _run_step(spec, context, kwargs)

        step.__name__ = name
        step.__doc__ = fn.__doc__
        step.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter("context", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                               annotation=AssetExecutionContext)]
            + [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in input_names]
            + passthrough + extra,
            return_annotation=Iterator)
        with warnings.catch_warnings():  # backfill_policy is "beta" in dagster 1.13
            warnings.simplefilter("ignore", BetaWarning)
            return asset(name=name, partitions_def=documents_partitions, code_version=code_version,
                         backfill_policy=BackfillPolicy.single_run(), ins=asset_ins,
                         hooks={drop_stale_document_rows}, **asset_kwargs)(step)

    return decorate


def _collect(value: Any) -> DocumentResult:
    """A per-document function's yields (``Output`` + check results) as a DocumentResult,
    its frame compacted (``_held``)."""
    if isinstance(value, DocumentResult):
        return _held(value)
    result = DocumentResult()
    for item in value if inspect.isgenerator(value) or isinstance(value, list) else [value]:
        if isinstance(item, Output):
            result.frame = item.value
            result.metadata = dict(item.metadata or {})
        elif isinstance(item, AssetCheckResult | PendingExpectations):
            result.checks.append(item)
        elif isinstance(item, pl.DataFrame):
            result.frame = item
    return _held(result)


def _held(result: DocumentResult) -> DocumentResult:
    """The result as the step holds it until the IO manager writes every document: its frame
    compacted (``storage.tables.compact``), and the pending expectation suite pointed at the
    compacted frame, so the builder's buffers are freed now, not at the end of the step."""
    if result.frame is None:
        return result
    original, result.frame = result.frame, compact(result.frame)
    result.checks = [PendingExpectations(c.asset, result.frame)
                     if isinstance(c, PendingExpectations) and c.df is original else c
                     for c in result.checks]
    return result


def _error_message(asset_name: str, key: str, exc: BaseException) -> str:
    if isinstance(exc, Failure) and exc.description:
        return exc.description
    text = str(exc).strip().splitlines()[-1] if str(exc).strip() else ""
    return text if text.startswith(f"{key}: ") else f"{key}: {asset_name}: {type(exc).__name__}: {text}"


def _check_problems(check: AssetCheckResult) -> str:
    metadata = check.metadata or {}
    value = metadata.get("problems") or metadata.get("failed")
    return str(getattr(value, "value", value) or "failed")


def _resolve_expectations(results: dict[str, DocumentResult]) -> None:
    """Run each pending suite once over all documents' tables; only when that fails, per
    document, to find which documents break it."""
    pending: dict[str, list[tuple[str, PendingExpectations]]] = {}
    for key, result in results.items():
        for check in result.checks:
            if isinstance(check, PendingExpectations):
                pending.setdefault(check.asset, []).append((key, check))
    for asset_name, items in pending.items():
        frames = [c.df for _, c in items if not c.df.is_empty()]
        combined = run_suite(asset_name, pl.concat(frames, how="vertical_relaxed")) if frames else None
        for key, check in items:
            if combined is None or combined.success:
                resolved = expectation_check(asset_name, run_suite(asset_name, check.df) if combined is None
                                             else combined)
            else:
                resolved = check.result()
            results[key].checks = [resolved if c is check else c for c in results[key].checks]


def _run_keys(context: AssetExecutionContext) -> tuple[list[str], bool, bool]:
    keys = sorted(context.partition_keys)
    tags = context.run.tags
    isolate = len(keys) > 1 or tags.get(ISOLATE_FAILURES_TAG) == "1"
    return keys, isolate, tags.get(FORCE_TAG) == "1"


def _run_step(spec: DocumentAssetSpec, context: AssetExecutionContext, kwargs: dict[str, Any]) -> Iterator[Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    keys, isolate, force = _run_keys(context)
    io: CorpusParquetIOManager = kwargs[IO_PARAM]
    environment = state.environment_fingerprint(kwargs[SETTINGS_PARAM], kwargs.get("llm") if spec.uses_llm else None)
    op_config = context.op_execution_context.op_config
    own = state.latest_records(context.instance, spec.name, keys)
    parents = {u: state.latest_records(context.instance, u, keys) for u in set(spec.inputs.values())}
    stored = {param: kwargs[param] for param in spec.inputs}
    body_args = {p: kwargs[p] for p in spec.passthrough}
    failed: dict[str, str] = {}
    reused: dict[str, state.PartitionRecord] = {}
    prints: dict[str, tuple[str | None, str | None]] = {}
    todo: list[str] = []
    for key in keys:
        upstream = {u: records.get(key) for u, records in parents.items()}
        source = (spec.source(kwargs[SETTINGS_PARAM], key) if spec.source is not None
                  else next((r.value(state.SOURCE) for r in upstream.values() if r is not None), None))
        missing = sorted(spec.inputs[p] for p, parts in stored.items() if key not in parts)
        if missing:
            failed[key] = f"{key}: no {', '.join(missing)} table (the document failed upstream)"
            prints[key] = (None, source)
            continue
        fp = state.fingerprint(spec.name, spec.code_version, environment, op_config, source or "",
                               {u: r.value(state.FINGERPRINT) if r else None for u, r in upstream.items()})
        prints[key] = (fp, source)
        record = own.get(key)
        if (not force and record is not None and not record.failed and record.value(state.FINGERPRINT) == fp
                and io.has_partition(spec.name, key)):
            reused[key] = record
        else:
            todo.append(key)
    if not isolate and failed:
        (key,) = failed
        raise Failure(description=failed[key], metadata={"document": key}, allow_retries=False)
    progress.document_done(spec.name, len(keys) - len(todo), len(keys))
    step_metadata: dict[str, Any] = {}
    results = _compute(spec, context, todo, stored, body_args, isolate, failed, len(keys), step_metadata)
    _resolve_expectations(results)
    for key, result in results.items():
        bad = [c for c in result.checks if isinstance(c, AssetCheckResult) and not c.passed
               and c.severity == AssetCheckSeverity.ERROR]
        if bad and key not in failed:
            failed[key] = "; ".join(f"{spec.name} check {c.check_name} failed: {_check_problems(c)}" for c in bad)
    outputs: dict[str, Any] = {key: KEEP_STORED for key in reused}
    outputs.update({k: r.frame for k, r in results.items() if k not in failed and r.frame is not None})
    for key in keys:
        fp, source = prints.get(key, (None, None))
        if key in reused:
            metadata = {k: v for k, v in reused[key].metadata.items() if not k.startswith("batch_")}
        elif key in failed:
            metadata = {state.FAILED: failed[key], state.SOURCE: source, state.ENVIRONMENT: environment}
        else:
            metadata = {**results[key].metadata, state.FINGERPRINT: fp, state.SOURCE: source,
                        state.ENVIRONMENT: environment}
        context.add_asset_metadata(metadata, partition_key=key)
    yield Output(outputs, metadata={
        "batch_documents": len(keys), "batch_computed": len(results) - len(set(results) & set(failed)),
        "batch_reused": len(reused), "batch_failed": len(failed),
        "batch_seconds": round(time.perf_counter() - wall, 3),
        "batch_cpu_seconds": round(time.process_time() - cpu, 3), **step_metadata})
    yield from _check_results(spec, context, results, reused, failed, isolate)


def _compute(spec: DocumentAssetSpec, context: AssetExecutionContext, todo: list[str],
             stored: dict[str, Mapping[str, pl.DataFrame]], body_args: dict[str, Any], isolate: bool,
             failed: dict[str, str], total: int, step_metadata: dict[str, Any]) -> dict[str, DocumentResult]:
    results: dict[str, DocumentResult] = {}
    if spec.batch:
        if not todo:
            return results
        inputs = {p: {k: parts[k] for k in todo} for p, parts in stored.items()}
        args = (DocumentContext(context, todo),) if spec.takes_context else ()
        returned = spec.fn(*args, **inputs, **body_args)
        if isinstance(returned, tuple):  # (results, metadata of the whole step)
            returned, extra = returned
            step_metadata.update({f"batch_{k}": v for k, v in extra.items()})
        results = {key: _held(result) for key, result in dict(returned).items()}
        for key, result in results.items():
            if result.error:
                if not isolate:
                    raise Failure(description=result.error, metadata={"document": key}, allow_retries=False)
                failed[key] = result.error
        progress.document_done(spec.name, total, total)
        return results
    done = total - len(todo)
    for key in todo:
        args = (DocumentContext(context, [key]),) if spec.takes_context else ()
        try:
            results[key] = _collect(spec.fn(*args, **{p: parts[key] for p, parts in stored.items()}, **body_args))
        except Exception as exc:
            if not isolate:
                raise
            failed[key] = _error_message(spec.name, key, exc)
            context.log.warning(f"{spec.name}: {failed[key]}")
        done += 1
        progress.document_done(spec.name, done, total)
    return results


def _check_results(spec: DocumentAssetSpec, context: AssetExecutionContext, results: dict[str, DocumentResult],
                   reused: Mapping[str, Any], failed: Mapping[str, str], isolate: bool) -> Iterator[AssetCheckResult]:
    selected = sorted(k.name for k in context.selected_asset_check_keys if k.asset_key == AssetKey(spec.name))
    if not isolate:
        done = set()
        for result in results.values():
            for check in result.checks:
                if isinstance(check, AssetCheckResult) and check.check_name in selected:
                    done.add(check.check_name)
                    yield check
        for name in selected:
            if name not in done:  # the document was reused: it passed when it was computed
                yield AssetCheckResult(check_name=name, asset_key=AssetKey(spec.name), passed=True,
                                       metadata={"documents_reused": len(reused)})
        return
    for name in selected:
        per = {k: c for k, r in results.items() for c in r.checks
               if isinstance(c, AssetCheckResult) and c.check_name == name}
        bad = {k: c for k, c in per.items() if not c.passed}
        listed = "\n".join(f"- {k}: {_check_problems(c)}" for k, c in sorted(bad.items())[:SHOWN])
        yield AssetCheckResult(
            check_name=name, asset_key=AssetKey(spec.name), passed=not bad,
            severity=AssetCheckSeverity.WARN if bad else AssetCheckSeverity.ERROR,
            metadata={"documents_checked": len(per), "documents_reused": len(reused),
                      "documents_failed": len(bad), "documents_left_out": len(failed),
                      "problems": MetadataValue.md(listed or "none")})
