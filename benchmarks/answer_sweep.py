"""The offline answerer's settings, measured on dev sets: retrieve once, answer many ways.

Each setting of ``generation/extractive.py`` (its module constants: ``MAX_UNITS``,
``TARGET_WORDS``, ``ASK_LEAD``, ...) changes only how the answer is cut from the packed
evidence, so the evidence is retrieved and packed once per question (the method's real
retrieval and the 2,048-token pack of ``edaqa eval``) and every variant answers the same
packs. Printed per variant and QA file, with the judge of ``edaqa eval`` (the offline atomic
judge, the base encoder's cosine for the undecided pairs):

* ``first``: how often the first claim cites a gold line (``first_claim_gold``);
* ``ans_r`` / ``ev_r`` / ``ratio``: the answer's fact recall, the packed evidence's, and
  their ratio (``atomic_r_of_evidence``: the share of what the evidence holds that the
  answer states);
* ``words`` (median, abstentions left out) and ``claims`` (mean); ``rougeL``.

Choose on dev sets only; ORD-QA is refused.

    .venv/bin/python benchmarks/answer_sweep.py --storage /tmp/edaqa_matrix/or26 \\
        --qa data/dev/openroad_dev.jsonl --qa data/dev/openroad_dev_check.jsonl \\
        --variant '{}' --variant '{"MAX_UNITS": 3, "TARGET_WORDS": 40}'
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def measure(rows: list[tuple[Any, list[Any]]], embed: Any) -> dict[str, float]:
    """The figures of one variant over one QA file's (item, packed evidence) rows."""
    from edaqa_pipeline.evaluation.atomic import atomic_rouge
    from edaqa_pipeline.evaluation.metrics import rouge_l
    from edaqa_pipeline.evaluation.runner import cites_gold
    from edaqa_pipeline.generation.answer import answer_question

    first, answer_r, evidence_r, words, claims, rouge = [], [], [], [], [], []
    for item, packed in rows:
        answer = answer_question(item.question, packed, packed=True)
        if answer.claims and item.gold_spans:
            first.append(float(cites_gold(answer.claims[0].citations, item.gold_spans)))
        said = atomic_rouge(answer.plain, list(item.atomic_facts), embed=embed)
        if said is not None:
            held = atomic_rouge("\n".join(e.text for e in packed), list(item.atomic_facts), embed=embed)
            answer_r.append(said.recall)
            evidence_r.append(held.recall if held is not None else 0.0)
        if answer.claims and not answer.not_in_documents:
            words.append(len(answer.plain.split()))
            claims.append(len(answer.claims))
        if item.answer.strip():
            rouge.append(rouge_l(answer.plain, item.answer) or 0.0)
    mean = statistics.mean
    out: dict[str, float] = {}
    if first:
        out["first"] = mean(first)
    if answer_r:
        out.update(ans_r=mean(answer_r), ev_r=mean(evidence_r))
        out["ratio"] = out["ans_r"] / out["ev_r"] if out["ev_r"] else 0.0
    if words:
        out.update(words=statistics.median(words), claims=mean(claims))
    if rouge:
        out["rougeL"] = mean(rouge)
    return {k: round(v, 3) for k, v in out.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--storage", required=True)
    parser.add_argument("--qa", action="append", required=True, help="a dev QA file (repeat)")
    parser.add_argument("--source-map", default=None)
    parser.add_argument("--method", default="edaqa")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--variant", action="append", default=[],
                        help="JSON object of extractive.py constants (repeat; none = the defaults)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if any("ord-qa" in Path(q).name for q in args.qa):
        raise SystemExit("ORD-QA is the test set: choose settings on dev sets only")

    from edaqa_pipeline.evaluation.atomic import MemoEmbed
    from edaqa_pipeline.evaluation.qa import load_qa
    from edaqa_pipeline.generation import extractive
    from edaqa_pipeline.retrieval.packing import pack_to_budget
    from edaqa_pipeline.service import EdaqaService

    service = EdaqaService.open(args.storage)
    retriever = service.retriever(args.method)
    embed = MemoEmbed(partial(service.snapshot.base.encode, stable=True))
    sets = {Path(qa).stem: [(item, pack_to_budget(list(retriever.retrieve(item.question, args.k).items)))
                            for item in load_qa(qa, "auto", args.source_map)] for qa in args.qa}
    for variant in [json.loads(v) for v in args.variant] or [{}]:
        unknown = [k for k in variant if not hasattr(extractive, k)]
        if unknown:
            raise SystemExit(f"not a setting of generation/extractive.py: {', '.join(unknown)}")
        saved = {k: getattr(extractive, k) for k in variant}
        try:
            for k, v in variant.items():
                setattr(extractive, k, v)
            figures = {name: measure(rows, embed) for name, rows in sets.items()}
        finally:
            for k, v in saved.items():
                setattr(extractive, k, v)
        print(json.dumps(variant), " | ".join(f"{name}: {f}" for name, f in figures.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
