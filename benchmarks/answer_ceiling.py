"""How far can a quoting answer go? ROUGE-L of the offline answerer against oracle quotes.

Why: the project's target for offline extractive answers is ROUGE-L >= 0.30 on ORD-QA. An
extractive answer is made of quoted evidence units (``generation.extractive.units_of``:
sentences, table rows, code lines), so its ROUGE-L is bounded by the best combination of units
it could quote. This script measures that bound with an **oracle that reads the reference
answer**: for each question, from the units of the best ``--items`` packed evidence items
(the same retrieval and 2,048-token packing as ``edaqa eval``), it

* ``oracle_1``: the single unit with the highest ROUGE-L against the reference;
* ``oracle_greedy_n``: units added one at a time, each time the one that raises ROUGE-L most
  (stopping when none does), up to n units (greedy: a lower bound of the exact optimum over
  the same units, which is exponential in their number).

and prints the mean next to the shipped answerer's (``answer_question``). The oracle reads
every unit of those items (the shipped rule reads the best ``extractive.MAX_ITEMS``), so no
rule that does not see the reference should beat the exact optimum; how far the shipped rule
is from the greedy figure says how much a better selection rule could still earn. It is a
diagnostic, not a method: nothing here may be used to choose a parameter on ORD-QA.

    .venv/bin/python benchmarks/answer_ceiling.py --storage /tmp/final6_openroad-2024 \\
        --qa ../shared/benchmarks/ord-qa.jsonl \\
        --source-map ../shared/benchmarks/ord-qa.source_map.json [--method edaqa] [--items 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

MAX_UNITS = 6


def greedy_oracle(units: list[str], reference: str, max_units: int = MAX_UNITS) -> list[float]:
    """ROUGE-L of the greedy oracle answer after 1..max_units units (non-decreasing)."""
    from edaqa_pipeline.evaluation.metrics import rouge_l

    chosen: list[str] = []
    best = 0.0
    curve: list[float] = []
    for _ in range(max_units):
        scored = [(rouge_l(" ".join([*chosen, u]), reference) or 0.0, u) for u in units if u not in chosen]
        value, unit = max(scored, key=lambda t: t[0], default=(0.0, ""))
        if value <= best:  # no unit raises it: the curve stays flat from here
            break
        best, chosen = value, [*chosen, unit]
        curve.append(best)
    return curve + [best] * (max_units - len(curve))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", required=True)
    parser.add_argument("--qa", required=True)
    parser.add_argument("--source-map", default=None)
    parser.add_argument("--method", default="edaqa")
    parser.add_argument("--items", type=int, default=5, help="evidence items the oracle may quote")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()

    from edaqa_pipeline.evaluation.metrics import rouge_l
    from edaqa_pipeline.evaluation.qa import load_qa
    from edaqa_pipeline.generation.answer import answer_question
    from edaqa_pipeline.generation.evidence import number_evidence
    from edaqa_pipeline.generation.extractive import units_of
    from edaqa_pipeline.retrieval.line_structure import line_kinds_of
    from edaqa_pipeline.retrieval.packing import pack_to_budget
    from edaqa_pipeline.service import EdaqaService
    from edaqa_pipeline.text.counting import EVIDENCE_BUDGET_TOKENS

    items = [i for i in load_qa(args.qa, "auto", args.source_map) if i.answer.strip()]
    if args.limit:
        items = items[: args.limit]
    retriever = EdaqaService.open(args.storage).retriever(args.method, None)
    started = time.perf_counter()
    shipped: list[float] = []
    oracle_1: list[float] = []
    curves: list[list[float]] = []
    ref_words: list[int] = []
    answer_words: list[int] = []
    for item in items:
        evidence = list(retriever.retrieve(item.question, args.k).items)[: args.k]
        packed = pack_to_budget(evidence, EVIDENCE_BUDGET_TOKENS)
        answer = answer_question(item.question, packed, packed=True).plain
        shipped.append(rouge_l(answer, item.answer) or 0.0)
        numbered = number_evidence(packed, packed=True)[: args.items]
        units = list(dict.fromkeys(u.text for rank, n in enumerate(numbered)
                                   for u in units_of(n.item.text, n.id, rank, line_kinds_of(n.item))))
        oracle_1.append(max((rouge_l(u, item.answer) or 0.0 for u in units), default=0.0))
        curves.append(greedy_oracle(units, item.answer))
        ref_words.append(len(item.answer.split()))
        answer_words.append(len(answer.split()))
    print(f"{args.qa}: {len(items)} questions with a reference answer, method {args.method}, "
          f"oracle over the best {args.items} packed items ({time.perf_counter() - started:.0f} s)")
    print(f"reference words (median) {statistics.median(ref_words):.0f}; "
          f"shipped answer words (median) {statistics.median(answer_words):.0f}")
    print(f"{'answer':<22}ROUGE-L")
    print(f"{'shipped (extractive)':<22}{statistics.mean(shipped):.3f}")
    print(f"{'oracle_1':<22}{statistics.mean(oracle_1):.3f}")
    for n in range(MAX_UNITS):
        print(f"{f'oracle_greedy_{n + 1}':<22}{statistics.mean(c[n] for c in curves):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
