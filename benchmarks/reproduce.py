"""The reproduction matrix: every quality figure of docs/results.md, re-run and checked.

``benchmarks/matrix.yaml`` lists the indexes (corpus + optional builds), the evaluations (index,
QA file, dev or test) and the figures (evaluation, method, metric, expected value). This
script, as Anserini's regressions do:

    .venv/bin/python benchmarks/reproduce.py                      # build what is missing, evaluate, compare
    .venv/bin/python benchmarks/reproduce.py --only dev26,mmbench # some evaluations
    .venv/bin/python benchmarks/reproduce.py --render             # rewrite the generated tables of docs/results.md
    .venv/bin/python benchmarks/reproduce.py --update             # write the measured values into the matrix
    .venv/bin/python benchmarks/reproduce.py --measured ordqa=/tmp/eval/metrics.json   # compare a finished run

Every index is built with ``edaqa index`` (through Dagster) into ``--work`` (default
/tmp/edaqa_matrix); every evaluation is one ``edaqa eval`` run of all its methods. A figure
"moved" when ``|measured - expected| > tolerance`` (default 0.0005: the metrics are
deterministic); the script prints each moved figure and exits 1 if any did. ``--render``
needs no run: the tables between the ``<!-- matrix:NAME -->`` markers of docs/results.md are
generated from the matrix file, so the document can never disagree with it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
MATRIX = REPO / "benchmarks" / "matrix.yaml"
RESULTS = REPO / "docs" / "results.md"
TOLERANCE = 0.0005


def load_matrix(path: Path = MATRIX) -> dict[str, Any]:
    matrix = yaml.safe_load(path.read_text())
    for name in ("indexes", "evaluations", "figures"):
        if name not in matrix:
            raise ValueError(f"{path}: missing section {name!r}")
    for figure in matrix["figures"]:
        if figure["eval"] not in matrix["evaluations"]:
            raise ValueError(f"{path}: figure {figure} names an unknown evaluation")
    for name, ev in matrix["evaluations"].items():
        if ev["index"] not in matrix["indexes"]:
            raise ValueError(f"{path}: evaluation {name} names an unknown index {ev['index']!r}")
    return matrix


def _resolve(path: str) -> str:
    return str((REPO / path).resolve()) if not os.path.isabs(path) else path


def _edaqa(*args: str) -> None:
    cmd = [sys.executable, "-m", "edaqa_pipeline.cli", *args]
    print("$ edaqa " + " ".join(args), flush=True)
    subprocess.run(cmd, cwd=REPO, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def build_index(name: str, spec: dict[str, Any], work: Path) -> Path:
    storage = work / name
    args = ["index", "--corpus", _resolve(spec["corpus"]), "--storage", str(storage), "--quiet"]
    if spec.get("with"):
        args.append("--with=" + ",".join(spec["with"]))
    _edaqa(*args)
    return storage


def methods_of(matrix: dict[str, Any], evaluation: str) -> list[str]:
    return list(dict.fromkeys(f["method"] for f in matrix["figures"] if f["eval"] == evaluation))


def run_evaluation(name: str, spec: dict[str, Any], storage: Path, methods: list[str], work: Path) -> dict[str, Any]:
    out = work / "eval" / name
    if spec.get("prepare") and not Path(_resolve(spec["qa"])).is_file():
        print(f"$ {spec['prepare']}", flush=True)  # e.g. benchmarks/dev_sets.py writes a dev set
        subprocess.run(spec["prepare"], shell=True, cwd=REPO, check=True)
    args = ["eval", "--storage", str(storage), "--qa", _resolve(spec["qa"]), "--out", str(out),
            "--methods", ",".join(methods), "--no-progress"]
    if spec.get("source_map"):
        args += ["--source-map", _resolve(spec["source_map"])]
    _edaqa(*args)
    return json.loads((out / "metrics.json").read_text())


def compare(matrix: dict[str, Any], measured: dict[str, dict[str, Any]]) -> list[str]:
    moved = []
    for figure in matrix["figures"]:
        metrics = measured.get(figure["eval"])
        if metrics is None:
            continue
        value = metrics["methods"].get(figure["method"], {}).get(figure["metric"])
        expected = figure.get("expected")
        tolerance = figure.get("tolerance", TOLERANCE)
        if value is None or expected is None or abs(value - expected) > tolerance:
            moved.append(f"{figure['eval']} {figure['method']} {figure['metric']}: expected "
                         f"{expected}, measured {value}")
        figure["measured"] = value
    return moved


def render_tables(matrix: dict[str, Any]) -> dict[str, str]:
    """Markdown table per evaluation: methods as rows, the evaluation's metrics as columns."""
    tables = {}
    by_eval: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for figure in matrix["figures"]:
        by_eval[figure["eval"]].append(figure)
    for name, figures in by_eval.items():
        spec = matrix["evaluations"][name]
        metrics = list(dict.fromkeys(f["metric"] for f in figures))
        methods = list(dict.fromkeys(f["method"] for f in figures))
        value = {(f["method"], f["metric"]): f.get("expected") for f in figures}
        lines = [f"*{spec['title']}* ({spec['split']} set; `benchmarks/reproduce.py --only {name}`)", "",
                 "| method | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
        for method in methods:
            cells = [f"{value[(method, m)]:.3f}" if value.get((method, m)) is not None else "-" for m in metrics]
            lines.append(f"| `{method}` | " + " | ".join(cells) + " |")
        tables[name] = "\n".join(lines)
    return tables


def render_results(matrix: dict[str, Any], path: Path = RESULTS) -> str:
    """docs/results.md with every ``<!-- matrix:NAME -->...<!-- /matrix -->`` block regenerated."""
    text = path.read_text()
    for name, table in render_tables(matrix).items():
        start, end = f"<!-- matrix:{name} -->", "<!-- /matrix -->"
        if start not in text:
            continue
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{start}\n{table}\n{end}{tail}"
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrix", type=Path, default=MATRIX)
    parser.add_argument("--work", type=Path, default=Path("/tmp/edaqa_matrix"))
    parser.add_argument("--only", default="", help="comma-separated evaluation names")
    parser.add_argument("--render", action="store_true", help="regenerate docs/results.md tables only")
    parser.add_argument("--update", action="store_true", help="store measured values as expected")
    parser.add_argument("--reuse", action="store_true", help="reuse indexes already in --work")
    parser.add_argument("--measured", action="append", default=[], metavar="EVAL=METRICS_JSON",
                        help="take an evaluation's figures from a finished `edaqa eval` run")
    args = parser.parse_args()
    matrix = load_matrix(args.matrix)
    if args.render:
        RESULTS.write_text(render_results(matrix))
        print(f"rendered {len(render_tables(matrix))} tables into {RESULTS}")
        return 0
    measured: dict[str, dict[str, Any]] = {}
    for pair in args.measured:
        name, _, path = pair.partition("=")
        measured[name] = json.loads(Path(path).read_text())
    wanted = [e for e in args.only.split(",") if e] or ([] if measured else list(matrix["evaluations"]))
    storages: dict[str, Path] = {}
    for name in wanted:
        spec = matrix["evaluations"][name]
        index = spec["index"]
        if index not in storages:
            storage = args.work / index
            built = (storage / "manifest.json").is_file()
            storages[index] = storage if (args.reuse and built) else build_index(index, matrix["indexes"][index], args.work)
        measured[name] = run_evaluation(name, spec, storages[index], methods_of(matrix, name), args.work)
    moved = compare(matrix, measured)
    if args.update:
        for figure in matrix["figures"]:
            if figure.get("measured") is not None:
                figure["expected"] = round(figure.pop("measured"), 3)
        lines = args.matrix.read_text().splitlines(keepends=True)
        header = "".join(itertools.takewhile(lambda line: line.startswith("#"), lines))  # safe_dump drops it
        args.matrix.write_text(header + yaml.safe_dump(matrix, sort_keys=False, width=110))
        print(f"updated {args.matrix}")
        return 0
    for line in moved:
        print("MOVED " + line)
    print(f"{len(moved)} of {sum(1 for f in matrix['figures'] if f['eval'] in measured)} figures moved")
    return 1 if moved else 0


if __name__ == "__main__":
    raise SystemExit(main())
