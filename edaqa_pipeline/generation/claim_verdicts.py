"""The verifier's verdict on a model's claim, and what it does before the claim is dropped.

``verdict_of`` checks a claim against the items it cites (``verify.py``); an id that is not
among the evidence proves nothing.

Small models often write two sentences where the schema asks for one ("The `check_placement`
command checks the placement. It returns 0 if the placement is legal."), each true of its own
sentence of the source, and the pair fails because no single unit states both. So a claim
that fails whole is verified sentence by sentence (``sentence_verdicts``). A sentence that
names an identifier of its own before any word that points back ("it", "this") stands alone
and is verified like any claim. Any other sentence continues the one before it: it is verified
only against the units that sentence rests on and the next unit of the same paragraph or code
block (never the next table row), shown only right after that sentence, and dropped, not
re-asked, when it fails; so "Its default is 20." after a claim about
`-sink_clustering_max_diameter` cannot borrow the `20` of another option's row.

A claim can also be true of an item it does not cite: a small model often cites ``E5`` for
what ``E4``, another part of the same manual, states. A claim (or a sentence that stands alone)
that fails on the items it cites is verified against the other items of the documents it cites
(``recited``), by the same rules, and when one unit states it, it is shown cited by that unit,
marked ``recited`` in the answer's record. Only the lines move, never the document: a claim
the model attributes to one manual is not shown as another document's word (a document that
forges an evidence item for `cts.md` cannot lend its own text to a claim cited to `cts.md`);
the re-ask names the items of other documents that state a failed claim
(``stated_elsewhere``: "E4 states it"), and the model's re-cited claim is verified like any other.
A claim with no key term (no identifier, number or quoted value: its words are all the
verifier can match) is never re-cited, since some sentence of a long manual shares most of a
few plain words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from edaqa_pipeline.generation.claim_terms import claim_terms, identifiers_of
from edaqa_pipeline.generation.claims import clean_claim
from edaqa_pipeline.generation.evidence import NumberedEvidence
from edaqa_pipeline.generation.grounded import Claim
from edaqa_pipeline.generation.units import TextUnit
from edaqa_pipeline.generation.verify import Verdict, verify_claim
from edaqa_pipeline.text.sentences import split_sentences

MAX_HINTS = 2  # items a re-ask names for a claim
# a word that points at something said before
POINTER = re.compile(r"\b(?:it|its|this|that|these|those|they|their|them|here|the latter|the former)\b",
                     re.IGNORECASE)


def verdict_of(claim: Claim, by_id: Mapping[str, NumberedEvidence]) -> Verdict:
    """The verifier's verdict on ``claim`` against the items it cites (``verify.py``)."""
    ids = list(dict.fromkeys(e.strip() for e in claim.evidence))
    known = [i for i in ids if i in by_id]
    if not known:  # an id that is not there proves nothing; the known ones are checked
        return Verdict(False, f"cites {', '.join(ids) or 'nothing'}, which is not among the "
                              f"evidence ids {', '.join(by_id)}")
    return verify_claim(claim.text, [(i, by_id[i].units()) for i in known])


def _cited(claim: Claim, by_id: Mapping[str, NumberedEvidence]) -> tuple[set[str], set[str]]:
    """(the ids ``claim`` cites, the documents of those among the evidence)."""
    cited = {e.strip() for e in claim.evidence}
    return cited, {by_id[i].item.doc for i in cited if i in by_id}


def recited(claim: Claim, by_id: Mapping[str, NumberedEvidence]) -> Verdict:
    """The verdict on ``claim`` against every item of the documents it cites, pooled (so a row
    of the cited item that gives the value otherwise still counts against it) and bound to
    single units only (no comparison across items); a failed verdict when the claim names no
    key term or rests on no item it does not cite."""
    cited, documents = _cited(claim, by_id)
    pool = [(i, n.units()) for i, n in by_id.items() if n.item.doc in documents]
    if len(pool) <= len(cited & set(by_id)) or claim_terms(clean_claim(claim.text)).empty:
        return Verdict(False, "")
    verdict = verify_claim(claim.text, pool, compare=False)
    if not verdict.verified or all(b.evidence_id in cited for b in verdict.bindings):
        return Verdict(False, "")
    return verdict


def stated_elsewhere(claim: Claim, by_id: Mapping[str, NumberedEvidence]) -> list[str]:
    """Ids of the items of other documents than the claim cites whose one unit states it: what
    a re-ask names ("E4 states it"), since a claim never moves to another document by itself."""
    _, documents = _cited(claim, by_id)
    found = [i for i, n in by_id.items() if n.item.doc not in documents
             and verify_claim(claim.text, [(i, n.units())], compare=False).verified]
    return found[:MAX_HINTS]


def checked(claim: Claim, by_id: Mapping[str, NumberedEvidence]) -> tuple[Verdict, bool]:
    """(verdict, re-cited): the verdict against the cited items or, when that fails and an
    item of the same documents states the claim, against that item (module docstring)."""
    verdict = verdict_of(claim, by_id)
    if verdict.verified:
        return verdict, False
    elsewhere = recited(claim, by_id)
    return (elsewhere, True) if elsewhere.verified else (verdict, False)


def stands_alone(sentence: str) -> bool:
    """Whether a later sentence of a claim says what it is about by itself: it names an
    identifier, and no pronoun comes before the first one ("Use it before `global_route`"
    points back; "The `x` command writes a file and closes it" does not)."""
    ids = identifiers_of(sentence)
    if not ids:
        return False
    first = min((at for at in (sentence.find(i) for i in ids) if at >= 0), default=0)
    pointer = POINTER.search(sentence)
    return pointer is None or pointer.start() > first


def continuation_units(previous: Verdict, by_id: Mapping[str, NumberedEvidence]) -> list[tuple[str, list[TextUnit]]]:
    """The units a sentence continuing ``previous`` may rest on: the units ``previous`` rests
    on and, after a sentence or code line, the next one of the same block of the same item (a
    table row is about its first cell: the next row is another option's)."""
    allowed: dict[str, list[TextUnit]] = {}
    for binding in previous.bindings:
        units = by_id[binding.evidence_id].units()
        at = units.index(binding.unit)
        near = units[at:at + 1 if binding.unit.kind == "row" else at + 2]
        mine = allowed.setdefault(binding.evidence_id, [])
        mine += [u for u in near if u.block == binding.unit.block and u not in mine]
    return list(allowed.items())


@dataclass(frozen=True)
class SentenceVerdict:
    """One sentence of a claim, its verdict, and whether it continues the sentence before it
    (then it is shown only right after that sentence, and never re-asked on its own: alone,
    "Its default is `20`." would verify against any row that says so)."""

    claim: Claim
    verdict: Verdict
    continues: bool
    recited: bool = False  # verified against an item the model did not cite (``checked``)


def sentence_verdicts(claim: Claim, by_id: Mapping[str, NumberedEvidence]) -> list[SentenceVerdict]:
    """Each sentence of a claim of several sentences with its verdict ([] for one sentence)."""
    sentences = split_sentences(claim.text)
    if len(sentences) < 2:
        return []
    out: list[SentenceVerdict] = []
    previous: Verdict | None = None
    for n, sentence in enumerate(sentences):
        part = Claim(text=sentence, evidence=list(claim.evidence))
        continues = n > 0 and not stands_alone(sentence)
        moved = False
        if not continues:
            verdict, moved = checked(part, by_id)
        elif previous is None:
            verdict = Verdict(False, "it continues a sentence that failed")
        else:
            verdict = verify_claim(sentence, continuation_units(previous, by_id))
            if not verdict.verified:
                verdict = Verdict(False, "the lines its sentence continues do not state it")
        previous = verdict if verdict.verified else None
        out.append(SentenceVerdict(part, verdict, continues, moved))
    return out
