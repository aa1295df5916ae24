"""Dagster is used through its public API; the one exception lives in ``dagster_compat``.

A name under ``dagster._...`` (or any Dagster package's ``_`` module) may move or change in any
release. The pipeline imports none outside ``edaqa_pipeline/assets/dagster_compat.py``, where each
use is one small function saying which public API is missing, so an upgrade that breaks one
breaks there. The run-tag names the pipeline spells itself must stay the strings Dagster uses.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "edaqa_pipeline"
ISOLATING_MODULE = "assets/dagster_compat.py"


def _dagster_root(name: str) -> bool:
    return name.split(".")[0] == "dagster" or name.split(".")[0].startswith("dagster_")


def _private_module(name: str) -> bool:
    """``dagster._core.x``, ``dagster_polars._x``: a Dagster module under a private segment."""
    return _dagster_root(name) and any(part.startswith("_") for part in name.split(".")[1:])


def private_uses(source: str, filename: str = "<module>") -> list[str]:
    """``line: what`` of every use of a private Dagster name in ``source``: imports from a
    private module, ``from dagster import _x``, ``dagster._x`` attribute access (also through
    ``import dagster as dg``) and ``import_module("dagster._x")``."""
    tree = ast.parse(source, filename=filename)
    uses: list[str] = []
    module_names: set[str] = set()  # local names bound to a Dagster package
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _private_module(alias.name):
                    uses.append(f"{node.lineno}: import {alias.name}")
                elif _dagster_root(alias.name):
                    module_names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _private_module(node.module):
                uses.append(f"{node.lineno}: from {node.module} import ...")
            elif _dagster_root(node.module):
                uses += [f"{node.lineno}: from {node.module} import {a.name}"
                         for a in node.names if a.name.startswith("_")]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in module_names):
            uses.append(f"{node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.Call):
            uses += [f"{node.lineno}: import of {arg.value!r}" for arg in node.args
                     if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _private_module(arg.value)]
    return uses


def test_no_module_but_dagster_compat_uses_a_private_dagster_name() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative == ISOLATING_MODULE:
            continue
        uses = private_uses(path.read_text(encoding="utf-8"), str(path))
        if uses:
            found[relative] = uses
    assert found == {}, f"private Dagster names outside {ISOLATING_MODULE}: {found}"


def test_the_isolating_module_is_where_the_private_names_are() -> None:
    """The scan is not vacuous: it finds what ``dagster_compat`` wraps."""
    uses = private_uses((PACKAGE / ISOLATING_MODULE).read_text(encoding="utf-8"))
    assert uses and all("dagster._core" in use for use in uses), uses


@pytest.mark.parametrize("source", [
    "from dagster._core.storage.tags import PARTITION_NAME_TAG",
    "import dagster._core.storage.tags",
    "from dagster import _check",
    "import dagster as dg\nx = dg._core",
    "import dagster\nx = dagster._serdes.serialize_value",
    "from dagster_polars._x import y",
    "import importlib\nimportlib.import_module('dagster._core.storage.tags')",
])
def test_the_scan_finds_each_kind_of_private_use(source: str) -> None:
    assert private_uses(source)


@pytest.mark.parametrize("source", [
    "from dagster import AssetKey, ResourceParam",
    "import dagster as dg\nx = dg.AssetKey\ny = dg.__version__",
    "from dagster_polars import PolarsParquetIOManager",
    "x = obj._private  # not a Dagster module",
])
def test_the_scan_leaves_public_uses_alone(source: str) -> None:
    assert private_uses(source) == []


def test_run_tag_names_are_the_strings_dagster_uses() -> None:
    from dagster._core.storage import tags

    from edaqa_pipeline.assets import document_specs

    assert document_specs.PARTITION_TAG == tags.PARTITION_NAME_TAG
    assert document_specs.PARTITION_RANGE_START_TAG == tags.ASSET_PARTITION_RANGE_START_TAG
    assert document_specs.PARTITION_RANGE_END_TAG == tags.ASSET_PARTITION_RANGE_END_TAG


def test_resource_parameters_are_told_apart_as_asset_does() -> None:
    """What ``per_document`` passes through (resources) and what it wires as inputs."""
    import polars as pl
    from dagster import Config, ResourceParam

    from edaqa_pipeline.assets.dagster_compat import is_resource_annotation
    from edaqa_pipeline.assets.io_manager import CorpusParquetIOManager
    from edaqa_pipeline.resources import LLMResource, PipelineSettings

    class Options(Config):
        limit: int = 1

    for annotation in (PipelineSettings, LLMResource, ResourceParam[CorpusParquetIOManager]):
        assert is_resource_annotation(annotation), annotation
    for annotation in (Options, pl.DataFrame, dict[str, pl.DataFrame], None):
        assert not is_resource_annotation(annotation), annotation
