"""The one module that uses a Dagster API outside the public ``dagster`` namespace.

Everything else in ``edaqa_pipeline`` uses public Dagster names only (a test,
``edaqa_pipeline_tests/test_dagster_public_api.py``, holds that). What cannot be done with
them is wrapped here, one small function per private name, each saying which public API is
missing and why the pipeline needs it, so that a Dagster upgrade that moves or renames one
breaks in this file and nowhere else.
"""

from __future__ import annotations

from typing import Any

from dagster._core.definitions.resource_annotation import _is_resource_annotation


def is_resource_annotation(annotation: Any) -> bool:
    """Whether ``@asset`` treats a parameter annotated ``annotation`` as a resource.

    ``assets.per_document.document_asset`` rebuilds the signature of each per-document
    function for ``@asset``: resource (and ``Config``) parameters go through to the function
    unchanged, every other parameter becomes a per-document input (an ``AssetIn``). The two
    must be sorted exactly as ``@asset`` sorts them, or a resource would be wired as an
    upstream asset (or the reverse) and the definitions would fail to load.

    Missing public API: Dagster has no public predicate for "this annotation makes the
    parameter a resource". Its rule accepts ``ResourceParam[...]`` and subclasses of
    ``ResourceDefinition``, ``ConfigurableResourceFactory`` and ``TreatAsResourceParam``; the
    last two are not exported, so the rule cannot be rebuilt from public names. Dagster's own
    predicate is therefore asked, here only.
    """
    return _is_resource_annotation(annotation)


__all__ = ["is_resource_annotation"]
