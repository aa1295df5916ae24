"""Two releases of the OpenROAD manuals in one storage root, against the naive index.

    .venv/bin/python benchmarks/releases.py --work /tmp/edaqa_releases [--reuse] [--check]

1. ``release``: ``openroad-2024`` indexed, then ``openroad`` added (``edaqa index --release``);
   the CPU seconds of each step are printed (children's user + system time), and the
   documents the second step built.
2. ``reversed``: the same two releases added in the other order: every table's
   ``content_hash`` must equal the first storage's (the order releases arrive in changes
   nothing), and its first step is a fresh build of ``openroad`` alone, the cost the second
   release is compared with.
3. ``naive``: both folders as two subfolders of one corpus, indexed without ``--release``
   (what a user had before releases): the same documents and keys, no release awareness.
4. ``edaqa eval`` of the version questions (``data/dev/openroad_versions_dev.jsonl``; with
   ``--check`` its check split too) on ``release`` and ``naive``: per method and category,
   span_hit@2048t, the share of packed evidence items from another release than the one the
   question is about (``wrong_release@2048t``), and the share of answers whose first claim
   cites that release; for the questions about what changed, span_all@2048t (every side's
   gold line in the evidence).
5. ``edaqa ask --json`` on the change questions and their unchanged controls (storage
   ``release``): a change question's answer must cite each release its gold lines are in; a
   control's must claim no change (``changes`` empty).

``--reuse`` keeps storages and evaluations that exist under ``--work``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO.parent / "shared" / "corpus"
EDAQA = str(Path(sys.executable).parent / "edaqa")
OLD = ("openroad-2024", "2024-03-01")  # the corpora's SOURCE.md commit dates
NEW = ("openroad", "2026-08-22")
METHODS = "bm25,dense,hybrid_rrf,edaqa"


def ask(storage: Path, question: str) -> dict:
    done = subprocess.run([EDAQA, "ask", question, "--storage", str(storage), "--json"], capture_output=True,
                          text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode != 0:
        sys.exit(f"edaqa ask {question!r} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def change_answers(work: Path, qa: Path) -> None:
    """Answers to the change questions and their controls, through ``edaqa ask``."""
    items = [json.loads(line) for line in qa.read_text().splitlines()]
    cited = controls = changes = quiet = 0
    for item in items:
        if item["category"] not in ("change", "change_control"):
            continue
        record = ask(work / "release", item["question"])
        shown = {c.split("/", 1)[0] for claim in record["claims"] for c in claim["citations"]}
        if item["category"] == "change":
            changes += 1
            cited += {e["release"] for e in item["evidence"]} <= shown and bool(record.get("changes"))
        else:
            controls += 1
            quiet += record.get("changes") == []
    print(f"  answers: {cited}/{changes} change questions cite every release of their gold lines; "
          f"{quiet}/{controls} unchanged controls claim no change")


def run(*argv: str) -> tuple[float, float]:
    """Run ``edaqa`` with ``argv``; (wall s, CPU s of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([EDAQA, *argv], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode != 0:
        sys.exit(f"edaqa {' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - started, cpu


def add(storage: Path, release: tuple[str, str]) -> tuple[float, float]:
    wall, cpu = run("index", "--corpus", str(CORPORA / release[0]), "--storage", str(storage),
                    "--release", release[0], "--release-date", release[1], "--quiet")
    steps = manifest(storage)["step_cpu_s"]
    vectors = embedding_counts(storage)
    print(f"  {storage.name} + {release[0]}: {cpu:.1f} CPU s ({wall:.1f} s); embedding steps "
          f"chunk {steps.get('chunk_embeddings', 0):.1f} + unit {steps.get('unit_embeddings', 0):.1f} "
          f"CPU s; chunk vectors encoded {vectors['batch_encoded']}, taken from the other "
          f"release {vectors['batch_shared_vectors']}")
    return wall, cpu


def embedding_counts(storage: Path) -> dict:
    """The last chunk_embeddings step's counts, from the storage root's Dagster instance."""
    os.environ["DAGSTER_HOME"] = str(storage / "dagster_home")
    from dagster import AssetKey, DagsterInstance

    with DagsterInstance.get() as instance:
        event = instance.get_latest_materialization_event(AssetKey("chunk_embeddings"))
        metadata = event.asset_materialization.metadata if event and event.asset_materialization else {}
        return {k: getattr(metadata.get(k), "value", 0) for k in ("batch_encoded", "batch_shared_vectors")}


def manifest(storage: Path) -> dict:
    return json.loads((storage / "manifest.json").read_text())


def build(work: Path, reuse: bool) -> None:
    release, reverse, naive = work / "release", work / "reversed", work / "naive"
    if not (reuse and (release / "manifest.json").is_file()):
        shutil.rmtree(release, ignore_errors=True)
        first, second = add(release, OLD), add(release, NEW)
        built = sum(int(r["documents"] or 0) for r in manifest(release)["runs"] if r["job"] != "assemble_corpus")
        print(f"release: {OLD[0]} {first[1]:.1f} CPU s ({first[0]:.1f} s), then {NEW[0]} added "
              f"{second[1]:.1f} CPU s ({second[0]:.1f} s), building {built} documents")
    if not (reuse and (reverse / "manifest.json").is_file()):
        shutil.rmtree(reverse, ignore_errors=True)
        fresh, other = add(reverse, NEW), add(reverse, OLD)
        print(f"reversed: {NEW[0]} alone (a fresh build) {fresh[1]:.1f} CPU s ({fresh[0]:.1f} s), "
              f"then {OLD[0]} {other[1]:.1f} CPU s ({other[0]:.1f} s)")
    if not (reuse and (naive / "manifest.json").is_file()):
        shutil.rmtree(naive, ignore_errors=True)
        corpus = work / "naive_corpus"
        shutil.rmtree(corpus, ignore_errors=True)
        for name, _ in (OLD, NEW):
            shutil.copytree(CORPORA / name, corpus / name)
        wall, cpu = run("index", "--corpus", str(corpus), "--storage", str(naive), "--quiet")
        print(f"naive: both folders as one corpus {cpu:.1f} CPU s ({wall:.1f} s)")
    tables = [manifest(s)["tables"] for s in (release, reverse, naive)]
    same = [name for name in tables[0] if tables[0][name]["content_hash"] == tables[1][name]["content_hash"]]
    print(f"content_hash equal, release vs reversed: {len(same)}/{len(tables[0])} tables; "
          f"documents {len(manifest(release)['documents'])}, failed {len(manifest(release)['failed'])}")


def _share(values: dict) -> str:
    share = values.get("wrong_release@2048t")
    return "-" if share is None else f"{share:.2f}"


def first_claim_release(rows: list[dict], method: str, release_of: dict[str, str]) -> float | None:
    firsts = [(r["id"], r["claims"][0]["citations"][0]) for r in rows
              if r["method"] == method and release_of[r["id"]] and r.get("claims")
              and r["claims"][0].get("citations")]
    if not firsts:
        return None
    return sum(c.startswith(release_of[i] + "/") for i, c in firsts) / len(firsts)


def evaluate(work: Path, split: str, reuse: bool) -> None:
    qa = REPO / "data" / "dev" / f"openroad_versions_{split}.jsonl"
    release_of = {json.loads(line)["id"]: json.loads(line).get("release") for line in qa.read_text().splitlines()}
    print(f"\n{qa.name}: span_hit@2048t / wrong_release@2048t / first claim from the asked release")
    for storage in ("release", "naive"):
        out = work / f"eval_{storage}_{split}"
        if not (reuse and (out / "metrics.json").is_file()):
            run("eval", "--storage", str(work / storage), "--qa", str(qa), "--methods", METHODS,
                "--judge", "none", "--no-progress", "--no-element-metrics", "--out", str(out))
        metrics = json.loads((out / "metrics.json").read_text())
        rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        change = metrics["by_category"].get("change", {})
        if change:
            print(f"  {storage:<8} change questions span_all@2048t: " + ", ".join(
                f"{m} {v['span_all@2048t']:.3f}" for m, v in change.items()))
        for method, values in metrics["methods"].items():
            cats = "  ".join(f"{c} {m[method]['span_hit@2048t']:.2f}/{_share(m[method])}"
                             for c, m in metrics["by_category"].items())
            first = first_claim_release(rows, method, release_of)
            print(f"  {storage:<8} {method:<11} {values['span_hit@2048t']:.3f} / "
                  f"{values['wrong_release@2048t']:.3f} / {first if first is None else round(first, 3)}   {cats}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/edaqa_releases"))
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--check", action="store_true", help="also the check split")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    build(args.work, args.reuse)
    for split in ("dev", "check") if args.check else ("dev",):
        evaluate(args.work, split, args.reuse)
        change_answers(args.work, REPO / "data" / "dev" / f"openroad_versions_{split}.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
