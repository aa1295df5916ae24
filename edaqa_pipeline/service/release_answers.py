"""Questions about what changed between two releases, answered from ``release_changes``.

``Releases.change_pair`` says whether a question asks what changed and between which two
releases; here the changes it is about are picked from the table (by the options it names,
else its commands, else its manuals: "what changed in CTS"), most telling first, and each
becomes two evidence items: the old row in the older release, the new row in the newer. The
answer is then written from those items like any answer, so both sides are cited, each with
its release. A question about something that did not change finds no change here and is
answered from the newer release as usual: no change is ever invented.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from edaqa_pipeline.generation.answer import Answer
from edaqa_pipeline.generation.change_claims import change_claims
from edaqa_pipeline.generation.claims import unsaid_claims
from edaqa_pipeline.generation.grounded import MAX_CLAIMS
from edaqa_pipeline.graphs.release_changes import side_item
from edaqa_pipeline.model import EvidenceItem

OPTION = re.compile(r"(?<![\w-])-[A-Za-z]\w*")
WORD = re.compile(r"[A-Za-z]\w*")
# what a reader asking "what changed" needs first
KIND_ORDER = ("default_changed", "values_changed", "option_removed", "option_added", "command_removed",
              "command_added", "moved", "description_changed")


def asked_changes(rows: Sequence[dict[str, Any]], question: str,
                  pair: tuple[str, str]) -> tuple[bool, list[dict[str, Any]]]:
    """(whether the question names an option, command or manual, the changes from
    ``pair[0]`` to ``pair[1]`` it is about): those of the options it names (of the commands it
    names, when it names both), else of its commands, else of its manuals."""
    mine = [r for r in rows if (r["from_release"], r["to_release"]) == pair]
    options = set(OPTION.findall(question))
    words = {w.lower() for w in WORD.findall(question)}
    known_commands = {r["command"].lower() for r in rows}
    named_commands = words & known_commands
    if options:
        found = [r for r in mine if r["option"] in options
                 and (not named_commands or r["command"].lower() in named_commands)]
    else:
        found = [r for r in mine if r["command"].lower() in named_commands] or \
            [r for r in mine if r["tool"].lower() in words]
    recognised = bool(options or named_commands or words & {r["tool"].lower() for r in rows})
    return recognised, sorted(found, key=lambda r: (KIND_ORDER.index(r["kind"]), r["tool"], r["command"], r["option"]))


def change_items(changes: Sequence[dict[str, Any]], k: int) -> list[EvidenceItem]:
    """The sides of the changes as evidence items, old side first, at most ``k`` items."""
    items: dict[str, EvidenceItem] = {}
    for row in changes:
        if len(items) + sum(bool(row[f"{s}_doc"]) for s in ("old", "new")) > k:
            break
        for side in ("old", "new"):
            if (item := side_item(row, side)) is not None:
                items.setdefault(item.evidence_id, item)
    return list(items.values())


def with_change_claims(answer: Answer, changes: Sequence[dict[str, Any]]) -> Answer:
    """``answer`` led by the verified claims of ``changes`` and a frame naming the releases
    compared (the claims' citations say which side is which). Its own claims follow when they
    say something the change claims do not (``claims.unsaid_claims``): a model's "`-x` now
    defaults to `30`" or a quote of the row under the change claim "The default of `-x` is
    `30`" is not said twice."""
    found = change_claims(changes, answer.evidence)
    if not found:
        return answer
    own = list(answer.claims)
    kept = unsaid_claims([c.text for c in found], [c.text for c in own], MAX_CLAIMS - len(found))
    claims = [*found, *(own[i] for i in kept)]
    first = changes[0]
    listed = "; ".join(f"{c['option'] + ' of ' if c['option'] else ''}{c['command']}: "
                       f"{c['kind'].replace('_', ' ')}" for c in changes)
    lead = f"From {first['from_release']} to {first['to_release']} ({listed}):"
    return replace(answer, claims=tuple(claims), not_in_documents=False, lead=lead)
