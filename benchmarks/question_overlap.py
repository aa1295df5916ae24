"""How close each question of a QA file comes to any question of the public sets.

A dev set written by hand must not paraphrase a benchmark question, or choices made on it
leak the benchmark in. For every question of ``--qa`` this prints its nearest public question
by cosine similarity of the base encoder (all-MiniLM-L6-v2) and by word Jaccard, and flags
those at or above ``--flag`` (cosine). The public sets are every JSONL of
``../shared/benchmarks`` with a ``question`` field (ORD-QA, ORD-MMBench, EDA-Corpus QA and its
augmentation) plus any ``--also`` files (e.g. the other dev sets).

    .venv/bin/python benchmarks/question_overlap.py --qa data/dev/openroad_asked_dev.jsonl \\
        --qa data/dev/openroad_asked_check.jsonl --also data/dev/openroad_dev.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
BENCHMARKS = REPO.parent / "shared" / "benchmarks"
_WORD = re.compile(r"[a-z0-9_\-]+")


def public_questions(paths: list[Path]) -> list[tuple[str, str]]:
    """(source, question) of every record with a string ``question`` in ``paths``."""
    found: list[tuple[str, str]] = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            record = json.loads(line)
            if isinstance(record, dict) and isinstance(record.get("question"), str):
                found.append((f"{path.name}:{record.get('id')}", " ".join(record["question"].split())))
    return found


def jaccard(a: str, b: str) -> float:
    x, y = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(x & y) / max(len(x | y), 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qa", action="append", required=True)
    parser.add_argument("--also", action="append", default=[])
    parser.add_argument("--flag", type=float, default=0.85)
    args = parser.parse_args()

    from edaqa_pipeline.evaluation.qa import load_qa
    from edaqa_pipeline.retrieval.encoders import base_encoder

    public = public_questions(sorted(BENCHMARKS.glob("*.jsonl")) + [Path(p) for p in args.also])
    ours = [(item.id, item.question) for path in args.qa for item in load_qa(path)]
    encoder = base_encoder()
    theirs = encoder.encode([q for _, q in public])
    mine = encoder.encode([q for _, q in ours])
    similarity = mine @ theirs.T
    flagged = 0
    worst = []
    for row, (qid, question) in enumerate(ours):
        best = int(similarity[row].argmax())
        cos = float(similarity[row, best])
        words = max(jaccard(question, q) for _, q in public)
        worst.append(cos)
        if cos >= args.flag:
            flagged += 1
            print(f"FLAG {qid} cos={cos:.3f} jaccard={words:.2f}\n  ours:   {question}\n  theirs: "
                  f"{public[best][1]} ({public[best][0]})")
    worst.sort()
    print(json.dumps({"questions": len(ours), "public_questions": len(public), "flag_at": args.flag,
                      "flagged": flagged, "max_cosine": round(worst[-1], 3),
                      "median_nearest_cosine": round(worst[len(worst) // 2], 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
