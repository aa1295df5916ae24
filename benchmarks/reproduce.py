"""The reproduction matrix: every quality figure of docs/results.md, re-run and checked.

``benchmarks/matrix.yaml`` lists the indexes (a corpus, or releases of one corpus added in
order, and optional builds), the evaluations (index, QA file, ``split: dev`` or ``split:
test``) and the figures (evaluation, method, metric, expected value). This script, as
Anserini's regressions do:

    .venv/bin/python benchmarks/reproduce.py                      # every dev evaluation: build what is missing, evaluate, compare
    .venv/bin/python benchmarks/reproduce.py --only dev26,mmbench # some dev evaluations
    .venv/bin/python benchmarks/reproduce.py --test --only ordqa  # the test split (ORD-QA): only when asked for by name
    .venv/bin/python benchmarks/reproduce.py --render             # rewrite the generated tables of docs/results.md
    .venv/bin/python benchmarks/reproduce.py --update             # write the measured dev values into the matrix
    .venv/bin/python benchmarks/reproduce.py --measured dev26=/tmp/eval/metrics.json   # compare a finished run

Every index is built with ``edaqa index`` (through Dagster) into ``--work`` (default
/tmp/edaqa_matrix); every evaluation is one ``edaqa eval`` run of all its methods. A figure
"moved" when ``|measured - expected| > tolerance`` (default 0.0005: the metrics are
deterministic); the script prints each moved figure and exits 1 if any did.

Dev and test. Every default (of ``edaqa`` and of the other methods) is chosen on the dev
evaluations only; the test split (ORD-QA) is measured once the code is fixed, and nothing is
chosen on it. So a test evaluation runs only with ``--test`` and only when ``--only`` names it:
a plain run covers the dev evaluations and says the test split was skipped; ``--only ordqa``
without ``--test``, or ``--test`` without ``--only``, is refused (exit status 2). ``--update``
writes test figures only with ``--test`` (also for ``--measured ordqa=...``), and then records
under that evaluation when and on which commit they were produced
(``produced: {date: YYYY-MM-DD, commit: <short HEAD>}``, ``+dirty`` when the work tree had
uncommitted changes; with ``--measured``, run ``--update`` on the tree the evaluation ran on).

``--render`` needs no run: the tables between the ``<!-- matrix:NAME -->`` markers of
docs/results.md are generated from the matrix file, so the document can never disagree with it;
a test table says when its figures were produced.
"""

from __future__ import annotations

import argparse
import datetime
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
REFUSED = 2  # exit status of a run the dev/test protocol does not allow


def load_matrix(path: Path = MATRIX) -> dict[str, Any]:
    matrix = yaml.safe_load(path.read_text())
    for name in ("indexes", "evaluations", "figures"):
        if name not in matrix:
            raise ValueError(f"{path}: missing section {name!r}")
    for figure in matrix["figures"]:
        if figure["eval"] not in matrix["evaluations"]:
            raise ValueError(f"{path}: figure {figure} names an unknown evaluation")
    for name, index in matrix["indexes"].items():
        if ("corpus" in index) == ("releases" in index):
            raise ValueError(f"{path}: index {name} needs either a corpus or a list of releases")
        for release in index.get("releases", []):
            if not {"corpus", "name", "date"} <= set(release):
                raise ValueError(f"{path}: index {name}: a release needs corpus, name and date, got {release}")
    for name, ev in matrix["evaluations"].items():
        if ev["index"] not in matrix["indexes"]:
            raise ValueError(f"{path}: evaluation {name} names an unknown index {ev['index']!r}")
        if ev.get("split") not in ("dev", "test"):
            raise ValueError(f"{path}: evaluation {name} has split {ev.get('split')!r} (dev or test)")
    return matrix


def split_of(matrix: dict[str, Any], split: str) -> list[str]:
    """The evaluations of one split (``dev`` or ``test``), in matrix order."""
    return [name for name, ev in matrix["evaluations"].items() if ev["split"] == split]


def _resolve(path: str) -> str:
    return str((REPO / path).resolve()) if not os.path.isabs(path) else path


def _edaqa(*args: str) -> None:
    cmd = [sys.executable, "-m", "edaqa_pipeline.cli", *args]
    print("$ edaqa " + " ".join(args), flush=True)
    subprocess.run(cmd, cwd=REPO, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def build_index(name: str, spec: dict[str, Any], work: Path) -> Path:
    """One storage root: a corpus, or releases of one corpus added in order (``edaqa index
    --release``), the way a deployment that keeps several releases of the manuals builds it."""
    storage = work / name
    steps = [(release["corpus"], ["--release", release["name"], "--release-date", str(release["date"])])
             for release in spec.get("releases", [])] or [(spec["corpus"], [])]
    for corpus, release_args in steps:
        args = ["index", "--corpus", _resolve(corpus), "--storage", str(storage), *release_args, "--quiet"]
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


def current_commit(repo: Path = REPO) -> str:
    """Short sha of HEAD, ``+dirty`` when tracked or untracked (not ignored) files differ from it;
    the two files this script writes (the matrix and docs/results.md) do not count."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
    try:
        sha = git("rev-parse", "--short", "HEAD")
        dirty = bool(git("status", "--porcelain", "--", ".", ":!benchmarks/matrix.yaml", ":!docs/results.md"))
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("+dirty" if dirty else "")


def update(matrix: dict[str, Any], include_test: bool, today: datetime.date | None = None,
           commit: str | None = None) -> tuple[int, int]:
    """Measured values become expected (rounded to 3 decimals); test figures only with
    ``include_test``, which also records when and on which commit they were produced.
    Returns (figures updated, test figures left untouched)."""
    tests = set(split_of(matrix, "test"))
    updated = kept = 0
    produced: set[str] = set()
    for figure in matrix["figures"]:
        value = figure.pop("measured", None)
        if value is None:
            continue
        if figure["eval"] in tests and not include_test:
            kept += 1
            continue
        figure["expected"] = round(value, 3)
        updated += 1
        if figure["eval"] in tests:
            produced.add(figure["eval"])
    for name in produced:
        matrix["evaluations"][name]["produced"] = {
            "date": (today or datetime.date.today()).isoformat(),
            "commit": commit or current_commit(),
        }
    return updated, kept


def write_matrix(matrix: dict[str, Any], path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    header = "".join(itertools.takewhile(lambda line: line.startswith("#"), lines))  # safe_dump drops it
    path.write_text(header + yaml.safe_dump(matrix, sort_keys=False, width=110))


def produced_line(spec: dict[str, Any]) -> str:
    produced = spec.get("produced")
    if not produced:
        return "When these test figures were produced is not recorded."
    note = f" ({produced['note']})" if produced.get("note") else ""
    return f"Test figures produced on {produced['date']}, on commit `{produced['commit']}`{note}."


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
        flag = "--test " if spec["split"] == "test" else ""
        lines = [f"*{spec['title']}* ({spec['split']} set; `benchmarks/reproduce.py {flag}--only {name}`)", ""]
        if spec["split"] == "test":
            lines += [produced_line(spec), ""]
        lines += ["| method | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
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


def select(matrix: dict[str, Any], only: list[str], measured: set[str], include_test: bool) -> tuple[list[str], str]:
    """The evaluations to run, or a reason to refuse (non-empty second value)."""
    tests = split_of(matrix, "test")
    unknown = [name for name in only if name not in matrix["evaluations"]]
    if unknown:
        return [], f"unknown evaluation(s): {', '.join(unknown)} (known: {', '.join(matrix['evaluations'])})"
    if include_test and not only and not measured:
        return [], ("--test runs a test evaluation only when --only names it: "
                    + " or ".join(f"--test --only {name}" for name in tests))
    named_tests = [name for name in only if name in tests]
    if named_tests and not include_test:
        return [], (f"{', '.join(named_tests)} is the test split (measured once the code is fixed; nothing is "
                    f"chosen on it): it runs only with --test --only {','.join(named_tests)}")
    if only:
        return only, ""
    if measured:
        return [], ""
    return split_of(matrix, "dev"), ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrix", type=Path, default=MATRIX)
    parser.add_argument("--work", type=Path, default=Path("/tmp/edaqa_matrix"))
    parser.add_argument("--only", default="", help="comma-separated evaluation names")
    parser.add_argument("--test", action="store_true",
                        help="allow the test split: run the test evaluation --only names, update its figures")
    parser.add_argument("--render", action="store_true", help="regenerate docs/results.md tables only")
    parser.add_argument("--update", action="store_true", help="store measured values as expected")
    parser.add_argument("--reuse", action="store_true", help="reuse indexes already in --work")
    parser.add_argument("--measured", action="append", default=[], metavar="EVAL=METRICS_JSON",
                        help="take an evaluation's figures from a finished `edaqa eval` run")
    args = parser.parse_args(argv)
    matrix = load_matrix(args.matrix)
    if args.render:
        RESULTS.write_text(render_results(matrix))
        print(f"rendered {len(render_tables(matrix))} tables into {RESULTS}")
        return 0
    measured: dict[str, dict[str, Any]] = {}
    for pair in args.measured:
        name, _, path = pair.partition("=")
        if name not in matrix["evaluations"]:
            print(f"reproduce.py: --measured names an unknown evaluation {name!r}", file=sys.stderr)
            return REFUSED
        measured[name] = json.loads(Path(path).read_text())
    only = [e for e in args.only.split(",") if e]
    wanted, refusal = select(matrix, only, set(measured), args.test)
    if refusal:
        print(f"reproduce.py: {refusal}", file=sys.stderr)
        return REFUSED
    tests = split_of(matrix, "test")
    if not only and not measured:
        print(f"test split skipped: {', '.join(tests)} (run it with "
              + " or ".join(f"--test --only {name}" for name in tests) + ")", flush=True)
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
        updated, kept = update(matrix, include_test=args.test)
        write_matrix(matrix, args.matrix)
        print(f"updated {updated} figures in {args.matrix}")
        if kept:
            print(f"left {kept} test figures untouched (the test split is updated only with --test)")
        return 0
    for line in moved:
        print("MOVED " + line)
    print(f"{len(moved)} of {sum(1 for f in matrix['figures'] if f['eval'] in measured)} figures moved")
    return 1 if moved else 0


if __name__ == "__main__":
    raise SystemExit(main())
