"""Row-level training queries: one question per parameter-table row, variable row, diagnostic
or procedure step of a unit.

Why: the unit-level templates (``templates.py``) ask about a unit as a whole ("What options
does `repair_design` accept?"), but users ask about one row of it: the default of one option,
the option that sets a given behaviour, what one message means, what comes after a given step
(the dev questions' parameter-lookup, diagnostic and procedure categories). Each form below
is written from one concrete row, so the encoder has to tell apart the rows of one table and
the same option of different commands, which the lexical and graph negatives of the sampler
then make hard.

=================  ==========  ==========================================================
form               T_q         written from
=================  ==========  ==========================================================
option_default     table       an option row whose description states a default
option_purpose     table       an option row: "Which option of `cmd` sets <gist>?"
option_task        table       an option row described by a verb: "How do I <verb> ...?"
option_meaning     table       an option row: "What does `-x` of `cmd` do?"
variable_purpose   table       a variable row (``VARIABLE`` of ``text.identifiers``)
variable_meaning   table       a variable row
message_meaning    (its type)  a message id (``MESSAGE_ID``) in any artifact of the unit
diagnostic_text    diagnostic  the first sentence of a diagnostic artifact, quoted
log_line           codeblock   an ERROR/WARNING line inside a code block, quoted
procedure_next     procedure   a procedure step followed by another
=================  ==========  ==========================================================

Rows are picked by a hash of (unit, form, row), so the choice is deterministic and spreads over
the rows of a long table. The copy guard of the templates applies (no query reproduces or is
contained in a unit sentence).
"""

from __future__ import annotations

import hashlib
from typing import Any

from edaqa_pipeline.model import normalise_ws
from edaqa_pipeline.training.pair_schema import DEFAULT_ROWS_PER_UNIT
from edaqa_pipeline.training.unit_facts import UnitFacts, copies_unit_text, short_phrase

# Verbs that open option descriptions ("Sets the ...", "Enable the ..."), base form.
_VERBS = frozenset("""
    add allow apply avoid change check choose connect control create define determine disable
    dump enable exclude force generate give ignore include indicate keep limit load make override
    perform place print read remove report restrict run save select set show skip specify turn
    use write
    """.split())
_QUOTE_WORDS = 14


def _h(key: str) -> int:
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16)


def _verb(word: str) -> tuple[str, bool]:
    """(base form, third person?) of a description's first word when it is one of ``_VERBS``
    (``specifies`` -> ``specify``, ``sets`` -> ``set``, ``enable`` -> ``enable``), else ("", False)."""
    if word in _VERBS:
        return word, False
    for base in (word[:-3] + "y" if word.endswith("ies") else "", word[:-2], word[:-1]):
        if base in _VERBS and word.endswith("s"):
            return base, True
    return "", False


def _quote(text: str) -> str:
    words = normalise_ws(text).split()
    return " ".join(words[:_QUOTE_WORDS]).rstrip(".:;,") + (" ..." if len(words) > _QUOTE_WORDS else "")


def _option_forms(f: UnitFacts, cmd: str) -> list[tuple[str, tuple[str, ...], str]]:
    out = []
    for opt, desc in f.options:
        gist = short_phrase(desc, max_words=10)
        noun = "option" if opt.startswith("-") else "argument"
        if "default" in desc.lower():
            out.append(("option_default", ("table",), f"What is the default value of `{opt}` for {cmd}?"))
        if len(gist.split()) >= 3:
            first, _, rest = gist.partition(" ")
            base, third = _verb(first)
            if base:
                purpose = f"Which {noun} of {cmd} {gist}?" if third else f"Which {noun} of {cmd} lets me {gist}?"
                out.append(("option_purpose", ("table",), purpose))
                out.append(("option_task", ("table",), f"How do I {base} {rest} with {cmd}?"))
            else:
                out.append(("option_purpose", ("table",), f"Which {noun} of {cmd} controls {gist}?"))
        out.append(("option_meaning", ("table",), f"What does `{opt}` mean for {cmd}?"))
    return out


def _variable_forms(f: UnitFacts) -> list[tuple[str, tuple[str, ...], str]]:
    out = []
    for var, desc in f.variables:
        gist = short_phrase(desc, max_words=10)
        if len(gist.split()) >= 3:
            third = _verb(gist.split()[0])[1]
            out.append(("variable_purpose", ("table",),
                        f"Which flow variable {gist}?" if third else f"Which flow variable is {gist}?"))
        out.append(("variable_meaning", ("table",), f"What does the variable `{var}` control?"))
    return out


def row_forms(f: UnitFacts) -> list[tuple[str, tuple[str, ...], str]]:
    """(form, T_q, query) for every row-level question the unit supports, in row order."""
    cmd = {"command": f"`{f.anchor}`", "file": f"the file {f.topic}"}.get(f.anchor_kind, f.topic)
    out = _option_forms(f, cmd) + _variable_forms(f)
    for mid, a_type in sorted(f.message_types.items()):
        out.append(("message_meaning", (a_type,), f"What does the message {mid} mean and how do I fix it?"))
    for diag in f.diagnostics:
        out.append(("diagnostic_text", ("diagnostic",), f"I get \"{_quote(diag)}\". What does it mean?"))
    for line in f.log_lines:
        out.append(("log_line", ("codeblock",), f"Why does the log say \"{_quote(line)}\"?"))
    for step in f.steps[:-1]:
        gist = short_phrase(step, max_words=10)
        if len(gist.split()) >= 2:
            out.append(("procedure_next", ("procedure",), f"After I {gist}, what is the next step for {f.topic}?"))
    return [(form, types, normalise_ws(q)) for form, types, q in out if set(types) <= set(f.types)]


def row_queries(f: UnitFacts, n: int = DEFAULT_ROWS_PER_UNIT) -> list[dict[str, Any]]:
    """Up to ``n`` row-level queries, rows chosen by hash and spread over forms (one per form
    before a second of any)."""
    forms = row_forms(f)
    ranked = sorted(range(len(forms)), key=lambda i: _h(f"{f.unit_id}|{forms[i][0]}|{forms[i][2]}"))
    seen_form: dict[str, int] = {}
    order = []
    for i in ranked:
        seen_form[forms[i][0]] = seen_form.get(forms[i][0], 0) + 1
        order.append((seen_form[forms[i][0]], len(order), i))
    out: list[dict[str, Any]] = []
    for _, _, i in sorted(order):
        form, types, query = forms[i]
        if len(out) >= n:
            break
        if any(q["query"] == query for q in out) or copies_unit_text(query, f.sentences):
            continue
        out.append({"form": form, "query": query, "required_types": sorted(types)})
    return out
