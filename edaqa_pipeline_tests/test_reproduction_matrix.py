"""The reproduction matrix (benchmarks/matrix.yaml) and docs/results.md cannot disagree, and
every figure names a registered method: a renamed or dropped method breaks this test, not
silently the documentation."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from edaqa_pipeline.registry import METHOD_NAMES

REPO = Path(__file__).resolve().parents[1]


def _reproduce() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reproduce", REPO / "benchmarks" / "reproduce.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_figure_names_a_registered_method_and_a_split() -> None:
    matrix = _reproduce().load_matrix()
    assert {f["method"] for f in matrix["figures"]} <= set(METHOD_NAMES)
    assert {e["split"] for e in matrix["evaluations"].values()} <= {"dev", "test"}
    assert [n for n, e in matrix["evaluations"].items() if e["split"] == "test"] == ["ordqa"]
    assert all(isinstance(f["expected"], float) for f in matrix["figures"])


def test_results_tables_are_rendered_from_the_matrix() -> None:
    reproduce = _reproduce()
    matrix = reproduce.load_matrix()
    assert (REPO / "docs" / "results.md").read_text() == reproduce.render_results(matrix)
    rendered = reproduce.render_tables(matrix)
    assert "| `edaqa` |" in rendered["ordqa"]
