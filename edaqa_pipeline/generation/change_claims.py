"""The claims of an answer about what changed between two releases.

Each change (``graphs/release_changes.py``) becomes one claim per side, and each side is
verified against its own evidence item only: "The default of `-sink_clustering_size` was
`20`" must hold in the older release's row, "... is `30`" in the newer's. A comparison is
never verified against the two rows pooled, so a value from one release can not stand for the
other. The claim text names no release (no row states its release); its citation does
(``openroad-2024/cts.md:L73``). A side that does not verify gives no claim.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edaqa_pipeline.generation.answer_claims import AnswerClaim, verified_claim
from edaqa_pipeline.generation.evidence import NumberedEvidence
from edaqa_pipeline.generation.grounded import MAX_CLAIMS
from edaqa_pipeline.generation.verify import verify_claim
from edaqa_pipeline.text.markup import table_cells
from edaqa_pipeline.text.sentences import split_sentences


def side_sentences(change: dict[str, Any]) -> list[tuple[str, str]]:
    """(side, sentence) of one change: what each release's row states."""
    name = f"`{change['option'] or change['command']}`"
    kind, old, new = change["kind"], change["old_value"], change["new_value"]
    if kind == "default_changed":
        return [s for s in (("old", f"The default of {name} was `{old}`" if old else ""),
                            ("new", f"The default of {name} is `{new}`" if new else "")) if s[1]]
    if kind == "values_changed":
        return [s for s in (("old", f"{name} allowed {old}" if old else ""),
                            ("new", f"{name} allows {new}" if new else "")) if s[1]]
    sides = [side for side in ("old", "new") if change[f"{side}_doc"]]
    return [(side, f"{name}: {described}") for side in sides
            if (described := first_sentence(change[f"{side}_text"]))]


def first_sentence(row: str) -> str:
    """The first sentence a table row states about its first cell ("" for other text)."""
    cells = table_cells(row)
    sentences = split_sentences(" ".join(cells[1:])) if len(cells) > 1 else []
    return sentences[0].strip() if sentences else ""


def change_claims(changes: Sequence[dict[str, Any]], numbered: Sequence[NumberedEvidence]) -> list[AnswerClaim]:
    """The verified claims of ``changes`` (at most ``MAX_CLAIMS``), most telling change first."""
    place = {(n.item.doc, n.item.start_line): n for n in numbered}
    claims: list[AnswerClaim] = []
    for change in changes:
        for side, sentence in side_sentences(change):
            item = place.get((change[f"{side}_doc"], change[f"{side}_start"]))
            if item is None or len(claims) >= MAX_CLAIMS:
                continue
            verdict = verify_claim(sentence, [(item.id, item.units())])
            if verdict.verified:
                claims.append(verified_claim(sentence, verdict, {item.id: item}))
    return claims
