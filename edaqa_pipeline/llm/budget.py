"""Output budgets: how many completion tokens one structured call may spend.

Without ``max_tokens`` a small local model sometimes generates until its context is full
(single requests of several minutes on a CPU), and nothing downstream can tell a slow answer
from a runaway one. Every request therefore carries a budget, derived from the response schema
so that it fits what a valid answer can need, and clipped by a global cap:

    budget = min(cap, task override or ceil(1.15 * schema_tokens(schema)) + FRAMING_TOKENS)

``schema_tokens`` is the size, in tokens of about four characters, of the longest JSON
document the schema expects, walked recursively:

==========================  ==================================================================
schema node                 tokens
==========================  ==================================================================
object                      2 + per property: key (len/4 + 2) + value
string                      maxLength/4 + 2 when bounded, else ``STRING_TOKENS`` (a sentence)
string enum / Literal       longest member / 4 + 2
integer, number             ``NUMBER_TOKENS``
boolean, null               2
array                       2 + maxItems (else ``ARRAY_ITEMS``) x (item + 1)
anyOf / oneOf / $ref        the largest alternative / the referenced definition
==========================  ==================================================================

A model that needs more than the budget is cut off by the server (``finish_reason ==
"length"``); the client then re-asks once with "answer shorter" rather than raising the budget.
A task whose output size depends on its input (one record per input sentence) can give its own
``max_output_tokens`` (an int or a function of the inputs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from edaqa_pipeline.text.counting import CHARS_PER_TOKEN

DEFAULT_CAP_TOKENS = 1024
MIN_BUDGET_TOKENS = 32
FRAMING_TOKENS = 16  # tool-call framing around the arguments, end-of-turn tokens
STRING_TOKENS = 48
NUMBER_TOKENS = 6
ARRAY_ITEMS = 8
SLACK = 1.15


def _text_tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN) + 2


def schema_tokens(node: Mapping[str, Any], defs: Mapping[str, Any] | None = None, _depth: int = 0) -> int:
    """Tokens of the longest JSON value ``node`` (a JSON schema) expects; see the module table."""
    defs = defs if defs is not None else node.get("$defs", {})
    if _depth > 12:  # recursive schemas: stop somewhere finite
        return STRING_TOKENS
    if "$ref" in node:
        name = str(node["$ref"]).rsplit("/", 1)[-1]
        return schema_tokens(defs.get(name, {}), defs, _depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in node:
            return max((schema_tokens(alt, defs, _depth + 1) for alt in node[key]), default=2)
    if "allOf" in node:
        return sum(schema_tokens(part, defs, _depth + 1) for part in node["allOf"])
    if "enum" in node or "const" in node:
        values = node.get("enum", [node.get("const")])
        return _text_tokens(max((len(str(v)) for v in values), default=1))
    kind = node.get("type")
    if isinstance(kind, list):  # ["string", "null"]
        return max(schema_tokens({**node, "type": k}, defs, _depth + 1) for k in kind)
    if kind == "object" or "properties" in node:
        props = node.get("properties", {})
        return 2 + sum(_text_tokens(len(name)) + schema_tokens(sub, defs, _depth + 1)
                       for name, sub in props.items())
    if kind == "array":
        items = node.get("items", {})
        count = int(node.get("maxItems", ARRAY_ITEMS))
        return 2 + count * (schema_tokens(items, defs, _depth + 1) + 1)
    if kind == "string":
        limit = node.get("maxLength")
        return _text_tokens(int(limit)) if limit is not None else STRING_TOKENS
    if kind in ("integer", "number"):
        return NUMBER_TOKENS
    return 2


def output_budget(
    schema: Mapping[str, Any],
    *,
    cap: int = DEFAULT_CAP_TOKENS,
    override: int | None = None,
) -> int:
    """The ``max_tokens`` of one request: the override or the schema size, within [32, cap]."""
    wanted = override if override is not None else math.ceil(SLACK * schema_tokens(schema)) + FRAMING_TOKENS
    return max(min(int(wanted), int(cap)), min(MIN_BUDGET_TOKENS, int(cap)))
