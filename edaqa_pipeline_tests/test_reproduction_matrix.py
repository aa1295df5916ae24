"""The reproduction matrix (benchmarks/matrix.yaml) and docs/results.md cannot disagree, every
figure names a registered method (a renamed or dropped method breaks this test, not silently
the documentation), and benchmarks/reproduce.py keeps the dev/test protocol: the test split
runs and is updated only when asked for with --test."""

from __future__ import annotations

import datetime
import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

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


# The dev/test protocol of reproduce.py, on a small matrix of its own. build_index and
# run_evaluation launch real `edaqa index` / `edaqa eval` runs; here they are replaced by
# functions that record what they were asked to run.

SMALL_MATRIX = """\
# A small matrix: this header comment survives --update.
indexes:
  small:
    corpus: data/sample
evaluations:
  dev1:
    index: small
    qa: data/sample_qa.jsonl
    split: dev
    title: first dev set
  dev2:
    index: small
    qa: data/sample_qa.jsonl
    split: dev
    title: second dev set
  ordqa:
    index: small
    qa: ord-qa.jsonl
    split: test
    title: the test set
figures:
- eval: dev1
  method: edaqa
  metric: span_cover@2048t
  expected: 0.5
- eval: dev2
  method: bm25
  metric: span_cover@2048t
  expected: 0.4
- eval: ordqa
  method: edaqa
  metric: doc_recall@1
  expected: 0.8
"""


def _small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, Path, list[tuple[str, str]]]:
    """reproduce.py with recording build/eval functions, and a temporary small matrix file."""
    reproduce = _reproduce()
    path = tmp_path / "matrix.yaml"
    path.write_text(SMALL_MATRIX)
    expected = {(f["eval"], f["method"], f["metric"]): f["expected"] for f in yaml.safe_load(SMALL_MATRIX)["figures"]}
    calls: list[tuple[str, str]] = []

    def build_index(name: str, spec: dict[str, Any], work: Path) -> Path:
        calls.append(("index", name))
        return work / name

    def run_evaluation(name: str, spec: dict[str, Any], storage: Path, methods: list[str], work: Path) -> dict[str, Any]:
        calls.append(("eval", name))
        return {"methods": {m: {metric: value for (ev, method, metric), value in expected.items()
                                if ev == name and method == m} for m in methods}}

    monkeypatch.setattr(reproduce, "build_index", build_index)
    monkeypatch.setattr(reproduce, "run_evaluation", run_evaluation)
    return reproduce, path, calls


def _evaluated(calls: list[tuple[str, str]]) -> list[str]:
    return [name for kind, name in calls if kind == "eval"]


def test_a_plain_run_evaluates_the_dev_split_only_and_says_so(tmp_path, monkeypatch, capsys) -> None:
    reproduce, path, calls = _small(tmp_path, monkeypatch)
    assert reproduce.main(["--matrix", str(path), "--work", str(tmp_path / "work")]) == 0
    assert _evaluated(calls) == ["dev1", "dev2"]
    assert "ordqa" not in _evaluated(calls)
    out = capsys.readouterr().out
    assert "test split skipped: ordqa" in out and "--test --only ordqa" in out
    assert "0 of 2 figures moved" in out


def test_the_test_split_runs_only_with_test_and_only_naming_it(tmp_path, monkeypatch, capsys) -> None:
    reproduce, path, calls = _small(tmp_path, monkeypatch)
    common = ["--matrix", str(path), "--work", str(tmp_path / "work")]
    for refused in (["--only", "ordqa"], ["--only", "dev1,ordqa"], ["--test"], ["--update", "--only", "ordqa"]):
        assert reproduce.main(common + refused) == 2, refused
        assert calls == [], refused
        assert "--test --only ordqa" in capsys.readouterr().err
    assert path.read_text() == SMALL_MATRIX
    assert reproduce.main([*common, "--only", "dev2"]) == 0
    assert _evaluated(calls) == ["dev2"]
    calls.clear()
    assert reproduce.main([*common, "--test", "--only", "ordqa"]) == 0
    assert _evaluated(calls) == ["ordqa"]


def _measured(tmp_path: Path, name: str, method: str, metric: str, value: float) -> str:
    out = tmp_path / f"{name}.json"
    out.write_text(json.dumps({"methods": {method: {metric: value}}}))
    return f"{name}={out}"


def test_update_without_test_leaves_the_test_figures_alone(tmp_path, monkeypatch, capsys) -> None:
    reproduce, path, calls = _small(tmp_path, monkeypatch)
    rc = reproduce.main(["--matrix", str(path), "--update",
                         "--measured", _measured(tmp_path, "dev1", "edaqa", "span_cover@2048t", 0.61234),
                         "--measured", _measured(tmp_path, "ordqa", "edaqa", "doc_recall@1", 0.9)])
    assert rc == 0 and calls == []
    assert "left 1 test figures untouched" in capsys.readouterr().out
    matrix = reproduce.load_matrix(path)
    expected = {f["eval"]: f["expected"] for f in matrix["figures"]}
    assert expected == {"dev1": 0.612, "dev2": 0.4, "ordqa": 0.8}
    assert "produced" not in matrix["evaluations"]["ordqa"]
    assert all("measured" not in f for f in matrix["figures"])
    assert path.read_text().startswith("# A small matrix: this header comment survives --update.\n")


def test_update_with_test_updates_the_test_figures_and_records_when_and_where(tmp_path, monkeypatch) -> None:
    reproduce, path, calls = _small(tmp_path, monkeypatch)
    rc = reproduce.main(["--matrix", str(path), "--update", "--test",
                         "--measured", _measured(tmp_path, "dev1", "edaqa", "span_cover@2048t", 0.61234),
                         "--measured", _measured(tmp_path, "ordqa", "edaqa", "doc_recall@1", 0.9)])
    assert rc == 0 and calls == []
    matrix = reproduce.load_matrix(path)
    assert {f["eval"]: f["expected"] for f in matrix["figures"]} == {"dev1": 0.612, "dev2": 0.4, "ordqa": 0.9}
    produced = matrix["evaluations"]["ordqa"]["produced"]
    assert produced["date"] == datetime.date.today().isoformat()
    assert re.fullmatch(r"[0-9a-f]{7,40}(\+dirty)?|unknown", produced["commit"])
    assert "produced" not in matrix["evaluations"]["dev1"]
    assert path.read_text().startswith("# A small matrix: this header comment survives --update.\n")
    rendered = reproduce.render_tables(matrix)["ordqa"]
    assert f"produced on {produced['date']}, on commit `{produced['commit']}`" in rendered
    assert "`benchmarks/reproduce.py --test --only ordqa`" in rendered


def test_the_published_test_table_says_when_its_figures_were_produced() -> None:
    reproduce = _reproduce()
    matrix = reproduce.load_matrix()
    produced = matrix["evaluations"]["ordqa"]["produced"]
    rendered = reproduce.render_tables(matrix)["ordqa"]
    assert f"Test figures produced on {produced['date']}, on commit `{produced['commit']}`" in rendered
    assert "--test --only ordqa" in rendered


def test_an_index_of_releases_adds_each_release_in_order(tmp_path, monkeypatch) -> None:
    reproduce = _reproduce()
    commands: list[tuple[str, ...]] = []
    monkeypatch.setattr(reproduce, "_edaqa", lambda *args: commands.append(args))
    spec = {"releases": [{"corpus": "/c/old", "name": "old", "date": "2024-03-01"},
                         {"corpus": "/c/new", "name": "new", "date": "2026-08-22"}]}
    storage = reproduce.build_index("two", spec, tmp_path)
    assert storage == tmp_path / "two"
    assert commands == [
        ("index", "--corpus", "/c/old", "--storage", str(storage), "--release", "old", "--release-date",
         "2024-03-01", "--quiet"),
        ("index", "--corpus", "/c/new", "--storage", str(storage), "--release", "new", "--release-date",
         "2026-08-22", "--quiet"),
    ]


@pytest.mark.parametrize("index", [
    "  both:\n    corpus: data/sample\n    releases: []\n",
    "  neither:\n    with: [train]\n",
    "  undated:\n    releases:\n    - corpus: data/sample\n      name: sample\n",
])
def test_an_index_needs_a_corpus_or_complete_releases(tmp_path, index: str) -> None:
    path = tmp_path / "matrix.yaml"
    path.write_text(SMALL_MATRIX.replace("indexes:\n", "indexes:\n" + index, 1))
    with pytest.raises(ValueError, match=r"index (both|neither|undated)"):
        _reproduce().load_matrix(path)
