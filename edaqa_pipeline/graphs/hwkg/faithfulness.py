"""Faithfulness of extracted properties (the paper's section IV-B2).

A property is faithful when its own source chunk supports it -- not "somewhere in the
datasheet": the check is against the chunk the property cites, so an unfaithful property is
one whose citation does not hold.

* **offline** (default, labelled ``offline-lexical``): every value token (each of min / typ /
  max, or the value; numbers compared under their spellings, "3.300" = "3.3", also glued to
  their unit, "256MB"), the unit, and at least three quarters of the name's words (a symbol
  set with a spaced subscript, "V DS", counts as "VDS") occur in the chunk text. Names made from a table's row and column labels
  pass because the chunk carries the header; the check is lexical, so it catches wrong
  citations, invented numbers and mangled units, not wrong semantics.
* **LLM judge** (``datasheet_faithfulness`` task, when a real model is configured): the model
  reads the property and the chunk and answers supported / not supported with a reason; the
  offline rule is the task's offline implementation, so a failed call degrades to it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from edaqa_pipeline.extraction.datasheets.textutil import normalise, number_variants
from edaqa_pipeline.llm import (
    DATA_NOT_INSTRUCTIONS,
    LLMClient,
    LLMError,
    LLMTask,
    delimit,
    register_task,
)
from edaqa_pipeline.text.tokens import STOP_WORDS, tokens, words

TASK = "datasheet_faithfulness"
NAME_SHARE = 0.75
_NUMERIC = re.compile(r"^[-+]?\d")


@dataclass
class Verdict:
    property_id: str
    faithful: bool
    value_ok: bool
    unit_ok: bool
    name_ok: bool
    missing: list[str] = field(default_factory=list)
    method: str = "offline-lexical"
    reason: str = ""


def _value_strings(prop: Mapping[str, Any]) -> list[str]:
    stats = [prop.get(k) for k in ("value_min", "value_typ", "value_max")]
    found = [s for s in stats if s]
    return found or ([prop["value"]] if prop.get("value") else [])


def _token_present(token: str, vocab: set[str], compact: str = "") -> bool:
    """A search token of the property occurs in the chunk: as a token (numbers under any of
    their spellings), or -- for a number glued to its unit ("256MB", "28nm") or a symbol set
    with a spaced subscript ("V DS" for VDS) -- inside the space-free text."""
    if _NUMERIC.match(token) or token[:1].isdigit():
        if any(v in vocab for v in number_variants(token)):
            return True
        return any(re.search(rf"(?<![\d.]){re.escape(v)}(?![\d])", compact) for v in number_variants(token))
    return token in vocab or (len(token) >= 2 and token in compact)


def offline_verdict(prop: Mapping[str, Any], chunk_text: str) -> Verdict:
    """The lexical check of one property against its source chunk's text."""
    text = normalise(chunk_text)
    compact = text.replace(" ", "")
    vocab: set[str] = set()
    for tok in [*tokens(text), *words(text)]:
        vocab.add(tok)
        vocab.update(number_variants(tok) if tok[:1].isdigit() else ())
    missing: list[str] = []
    value_ok = True
    for value in _value_strings(prop):
        # whole numbers and literals ("0.7", "0xffff_ffff"), not their dot-separated parts
        toks = [w for w in words(normalise(value)) if w not in STOP_WORDS]
        if not toks:
            continue
        absent = [t for t in toks if not _token_present(t, vocab, compact)]
        if absent:
            value_ok = False
            missing.extend(f"value:{t}" for t in absent)
    unit = normalise(prop.get("unit") or "").replace(" ", "")
    unit_ok = not unit or unit in compact
    if not unit_ok:
        missing.append(f"unit:{prop.get('unit')}")
    name = prop.get("original_name") or prop.get("name") or ""
    terms = [t for t in tokens(normalise(name)) if len(t) > 1]
    present = [t for t in terms if _token_present(t, vocab, compact)]
    name_ok = not terms or len(present) >= NAME_SHARE * len(terms)
    if not name_ok:
        missing.extend(f"name:{t}" for t in terms if t not in present)
    return Verdict(
        property_id=str(prop.get("property_id") or prop.get("node_id") or ""),
        faithful=value_ok and unit_ok and name_ok,
        value_ok=value_ok,
        unit_ok=unit_ok,
        name_ok=name_ok,
        missing=missing,
    )


# ---------------------------------------------------------------------------------------------
# LLM judge


class Judgement(BaseModel):
    """Whether the chunk supports the property."""

    supported: bool = Field(description="true when the chunk states this property")
    reason: str = Field(default="", description="one short sentence")


JUDGE_PROMPT = (
    "You check one engineering property extracted from a hardware datasheet against the chunk "
    "it was extracted from. Answer supported=true only if the chunk explicitly states the "
    "property with this value (or range), unit and conditions. " + DATA_NOT_INSTRUCTIONS
)


def _render(inputs: Mapping[str, Any]) -> str:
    p = inputs["property"]
    value = " ".join(x for x in (p.get("value") or "", p.get("unit") or "") if x)
    return (
        f"Property: {p.get('original_name') or p.get('name')} = {value}\n"
        f"Conditions: {p.get('conditions') or '-'}\n"
        f"Description: {p.get('description') or '-'}\n"
        + delimit(inputs["chunk_text"], "document", chunk_id=inputs["chunk_id"])
    )


def _offline(inputs: Mapping[str, Any]) -> BaseModel:
    v = offline_verdict(inputs["property"], inputs["chunk_text"])
    return Judgement(supported=v.faithful, reason="; ".join(v.missing) or "all tokens found")


register_task(LLMTask(name=TASK, system_prompt=JUDGE_PROMPT, render_user=_render, offline=_offline))


def judge(
    properties: list[Mapping[str, Any]],
    chunk_text: Mapping[str, str],
    client: LLMClient | None = None,
    *,
    temperature: float = 0.2,
) -> list[Verdict]:
    """One verdict per property: offline rule (method ``offline-lexical``), or the LLM judge
    when ``client`` is a real model (method ``llm``; a failed call, or one the client's
    fallback answered, takes the offline verdict, method ``offline-fallback``)."""
    out = []
    use_llm = client is not None and client.provider != "offline"
    for prop in properties:
        text = chunk_text.get(prop.get("chunk_id") or "", "")
        base = offline_verdict(prop, text)
        if not text:
            base.faithful, base.reason = False, "source chunk not found"
            out.append(base)
            continue
        if not use_llm:
            out.append(base)
            continue
        assert client is not None
        inputs = {"property": dict(prop), "chunk_text": text, "chunk_id": prop.get("chunk_id")}
        before = client.stats.fallbacks
        try:
            j = client.complete_structured(TASK, inputs, Judgement, temperature=temperature)
            if client.stats.fallbacks == before:
                base.faithful, base.method, base.reason = bool(j.supported), "llm", j.reason
            else:
                base.method = "offline-fallback"
        except LLMError as exc:
            base.method, base.reason = "offline-fallback", str(exc)[:200]
        out.append(base)
    return out


def summary(verdicts: list[Verdict]) -> dict[str, Any]:
    n = len(verdicts)
    faithful = sum(v.faithful for v in verdicts)
    return {
        "properties": n,
        "faithful": faithful,
        "faithfulness": round(faithful / n, 4) if n else None,
        "value_ok": sum(v.value_ok for v in verdicts),
        "unit_ok": sum(v.unit_ok for v in verdicts),
        "name_ok": sum(v.name_ok for v in verdicts),
        "methods": dict(Counter(v.method for v in verdicts)),
    }


def verdict_rows(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    return [asdict(v) for v in verdicts]


__all__ = ["TASK", "Judgement", "Verdict", "judge", "offline_verdict", "summary", "verdict_rows"]
