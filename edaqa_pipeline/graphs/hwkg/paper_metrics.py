"""The paper's evaluation of one document (section IV, Figure 4): faithfulness and completeness.

1. **faithfulness** of our properties against their own source chunk, and of the one-shot
   baseline's against its reference (which must occur in its input);
2. both graphs' faithful properties **normalised** to one granularity;
3. **inter-graph completeness** both ways: our graph as Reference covered by the baseline,
   and the baseline covered by ours (full / partial / none).

Every figure carries the judge that produced it: ``llm`` (a configured model),
``offline-lexical`` (the deterministic check) or ``offline-fallback`` (a model call failed).
``sample`` limits how many properties a *model* judges (deterministic: the first ones in id
order), because a small local model needs seconds per call; offline judges see everything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from edaqa_pipeline.graphs.hwkg.completeness import completeness
from edaqa_pipeline.graphs.hwkg.faithfulness import judge, summary
from edaqa_pipeline.graphs.hwkg.normalisation import normalise_graph
from edaqa_pipeline.graphs.hwkg.oneshot import DEFAULT_CONTEXT_TOKENS, one_shot
from edaqa_pipeline.llm import LLMClient


def _sampled(rows: Sequence[Mapping[str, Any]], sample: int | None, use_llm: bool) -> list[Mapping[str, Any]]:
    ordered = sorted(rows, key=lambda r: str(r.get("property_id") or r.get("node_id") or ""))
    return ordered[:sample] if use_llm and sample else ordered


def evaluate_document(document: str, chunks: list[dict[str, Any]], ours: Sequence[Mapping[str, Any]],
                      category: str, client: LLMClient | None = None, *, sample: int | None = None,
                      context_tokens: int = DEFAULT_CONTEXT_TOKENS, temperature: float = 0.2,
                      ) -> dict[str, Any]:
    """Faithfulness, one-shot baseline and completeness for one document.

    ``ours`` are our graph's active property rows (``property_id`` or ``node_id``,
    ``chunk_id``, value fields); ``chunks`` the document's datasheet chunks."""
    use_llm = client is not None and client.provider != "offline"
    texts = {c["chunk_id"]: c["text"] for c in chunks}
    ours_judged = _sampled(ours, sample, use_llm)
    our_verdicts = judge(list(ours_judged), texts, client, temperature=temperature)
    baseline, oneshot_stats = one_shot(document, chunks, category, client, context_tokens=context_tokens,
                                       temperature=temperature)
    base_judged = _sampled(baseline, sample, use_llm)
    refs = {r["property_id"]: (r["reference"] if r["reference_ok"] else "") for r in base_judged}
    base_verdicts = judge([{**r, "chunk_id": r["property_id"]} for r in base_judged], refs, client,
                          temperature=temperature)
    faithful_ours = [p for p, v in zip(ours_judged, our_verdicts, strict=True) if v.faithful]
    faithful_base = [p for p, v in zip(base_judged, base_verdicts, strict=True) if v.faithful]
    norm_ours, ours_methods = normalise_graph(faithful_ours, client, temperature=temperature)
    norm_base, base_methods = normalise_graph(faithful_base, client, temperature=temperature)
    return {
        "document": document,
        "faithfulness": {"ours": summary(our_verdicts), "baseline": summary(base_verdicts)},
        "baseline": {**oneshot_stats, "reference_ok": sum(r["reference_ok"] for r in baseline)},
        "normalised": {"ours": len(norm_ours), "baseline": len(norm_base),
                       "methods": {"ours": ours_methods, "baseline": base_methods}},
        "completeness": {
            "ours_by_baseline": completeness(norm_ours, norm_base, client, temperature=temperature),
            "baseline_by_ours": completeness(norm_base, norm_ours, client, temperature=temperature),
        },
    }


def totals(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Sums over documents: faithful / all per graph and full / partial / none per direction."""
    out: dict[str, Any] = {}
    for side in ("ours", "baseline"):
        n = sum(r["faithfulness"][side]["properties"] for r in results)
        f = sum(r["faithfulness"][side]["faithful"] for r in results)
        out[f"faithfulness_{side}"] = round(f / n, 4) if n else None
        out[f"properties_{side}"] = n
    for direction in ("ours_by_baseline", "baseline_by_ours"):
        n = sum(r["completeness"][direction]["n"] for r in results)
        for c in ("full", "partial", "none"):
            k = sum(r["completeness"][direction][c] for r in results)
            out[f"{direction}_{c}"] = round(k / n, 4) if n else None
    return out


__all__ = ["evaluate_document", "totals"]
