"""Properties stated in prose: the offline rules for a value with a unit in a sentence.

Datasheets and specifications state many limits in sentences, not tables ("The maximum
number of outstanding bus transactions is 255.", "VDD shall not exceed 3.6 V.", "a 9-stage,
dual-issue pipeline"). Each rule below reads one way of saying it; the first rule that claims
a number wins it, so one value gives one property. ``rule`` names the rule:

==================  ========================================================================
``sentence:bounds`` "X is no less than N unit, and no greater than M unit" (min and max of one
                    property); "A MUST have a duty cycle that is ..." names it "A duty cycle"
``sentence:range``  "X ranges from N to M unit", "X is between N and M unit"
``sentence:cycles`` a length in clock cycles: "X must be asserted for at least N [full] clock
                    cycles", "X must be at least N clock cycles", "X requires N clock cycles"
``sentence:limit``  "X shall / must / should not exceed N unit" (max), "... not be below" (min)
``sentence:is``     "X is / are / must be [at least | up to | typically] N unit [to M unit]";
                    a unitless N only when X names a quantity ("the maximum number of ...");
                    "maximum" / "minimum" / "typical" in X set max / min / typ
``sentence:equals`` "X = N unit", "X: N unit" (a symbol with its value: "fT = 300 GHz")
``sentence:of``     "a/the X of [about | up to] N unit" ("a throughput increase of 33%")
``sentence:count``  "[up to | at least] N X" with a plural noun ("up to 255 external
                    interrupts"), "N-unit X" ("34-cycle latency divider", "32-bit timers")
``sentence:mention`` any other "N unit" ("benchmarked at about 428 Mbyte/sec"), named by the
                    content words before it in its clause
==================  ========================================================================

Conditions: a trailing "at / with / when / for ..." clause or a leading "With ..., " clause.
The sentence itself goes into the description (``extra``), so a property read from prose keeps
the context it was stated in. Subjects that are pronouns or conjunctions ("it is", "If the
width ... is") are refused; numbers inside identifiers, section and figure numbers (no unit)
never become values.
"""

from __future__ import annotations

import re
from typing import Any

from edaqa_pipeline.extraction.datasheets.property_rows import raw_property
from edaqa_pipeline.extraction.datasheets.textutil import NUMBER_RE, NUMBER_WORDS, UNIT_RE, is_unit
from edaqa_pipeline.text.tokens import STOP_WORDS

_WORDNUM = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
NUM = rf"(?:{NUMBER_RE}|0x[0-9A-Fa-f_]+|\b(?:{_WORDNUM})\b)"
_UNIT = rf"(?:{UNIT_RE}|%)"
_QUALIFIER = {
    "typ": r"typically|nominally|typ\.?",
    "min": r"at\s+least|a\s+minimum\s+of|minimum|no\s+less\s+than|not\s+less\s+than|more\s+than|"
    r"greater\s+than|above|higher\s+than",
    "max": r"at\s+most|up\s+to|a\s+maximum\s+of|maximum|limited\s+to|no\s+more\s+than|"
    r"not\s+more\s+than|no\s+greater\s+than|not\s+greater\s+than|no\s+higher\s+than|below|"
    r"less\s+than|lower\s+than",
    "value": r"(?:fixed|set|specified|rated|defined|guaranteed|configured|programmed)\s+"
    r"(?:at|to|as)|approximately|about|around|exactly|equal\s+to|only",
}
_QUAL = "|".join(f"(?P<q_{k}>{v})" for k, v in _QUALIFIER.items())
_VALUE = rf"(?P<v1>{NUM})(?:-|\s*)(?P<u1>{_UNIT})?(?![\w/])"
_SUBJECT = r"(?P<subj>[A-Za-z(][^.;:!?=]*?)"
_COPULA = (r"(?:is|are|was|were|equals|amounts\s+to|has\s+a\s+value\s+of|"
           r"(?:shall|must|should|will|can|may)\s+be|is\s+set\s+to|defaults\s+to)")

_RANGE = re.compile(
    rf"{_SUBJECT}\s+(?:ranges?|varies|vary|extends?|is|are|lies|lie)\s+(?:in\s+the\s+range\s+)?"
    rf"(?:from|between|of)\s+(?P<v1>{NUM})\s*(?P<u1>{_UNIT})?\s*(?:to|and|-|–|\.\.\.?)\s*"
    rf"(?P<v2>{NUM})\s*(?P<u2>{_UNIT})?(?![\w/])", re.IGNORECASE)
_LIMIT = re.compile(
    rf"{_SUBJECT}\s+(?:shall|must|should|may|does|do|will|can)\s*(?:not|never)\s+"
    rf"(?P<verb>exceed|be\s+(?:greater|more|higher|larger)\s+than|be\s+(?:less|lower|smaller)\s+than|"
    rf"fall\s+below|drop\s+below|go\s+below)\s+{_VALUE}", re.IGNORECASE)
_IS = re.compile(rf"{_SUBJECT}\s+{_COPULA}\s+(?:(?:{_QUAL})\s+)?{_VALUE}"
                 rf"(?:\s*(?:to|-|–|\.\.\.?)\s*(?P<v2>{NUM})(?:-|\s*)(?P<u2>{_UNIT})?)?(?![\w/])",
                 re.IGNORECASE)
_EQUALS = re.compile(rf"(?P<subj>(?<![\w/])(?:\b[A-Za-z]\s)?[A-Za-z][\w()]{{0,15}})\s*(?:=|:)\s*(?:(?:{_QUAL})\s+)?"
                     rf"(?P<v1>{NUMBER_RE})\s*(?P<u1>{_UNIT})(?![\w/])")
_OF = re.compile(rf"\b(?:an?|the|its|their)\s+(?P<subj>(?:[\w/-]+\s+){{0,4}}?[\w/-]+)\s+of\s+"
                 rf"(?:(?:{_QUAL})\s+)?{_VALUE}", re.IGNORECASE)
_COUNT_UNITS = r"stages?|cycles?|beats?|ways?|entry|entries|bits?|bytes?|words?|ports?|lanes?|pins?|levels?"
_COUNT = re.compile(
    rf"(?:(?:{_QUAL})\s+)?(?<![\w.\-/])(?P<v1>{NUM})(?:-(?P<u1>{_COUNT_UNITS}|{UNIT_RE})|\s*(?P<u2>{UNIT_RE}))?"
    rf"(?P<rest>(?:[\s,]+[A-Za-z][\w/-]*){{1,6}})", re.IGNORECASE)
_MIN_Q, _MAX_Q = _QUALIFIER["min"], _QUALIFIER["max"]
# a subject that may start with a bracketed signal name ("[RST_I] MUST be asserted ...")
_NAMED = r"(?P<subj>[\[A-Za-z(][^.;:!?=]*?)"
_BOUNDS = re.compile(
    rf"{_NAMED}\s+{_COPULA}\s+(?:(?P<lo1>{_MIN_Q})|(?P<hi1>{_MAX_Q}))\s+(?P<v1>{NUM})\s*(?P<u1>{_UNIT})?"
    rf"\s*,?\s*(?:and|but)\s+(?:{_COPULA}\s+)?(?:(?P<lo2>{_MIN_Q})|(?P<hi2>{_MAX_Q}))\s+(?P<v2>{NUM})\s*"
    rf"(?P<u2>{_UNIT})?(?![\w/])", re.IGNORECASE)
_CYCLES = re.compile(
    rf"{_NAMED}\s+(?:{_COPULA}\s+(?:(?P<verb>(?:de)?asserted|held|kept|driven|stable|valid|active)"
    rf"(?:\s+(?:low|high))?\s+for\s+)?|(?P<needs>requires?|takes?|needs?|lasts?)\s+)"
    rf"(?:(?:{_QUAL})\s+)?(?P<v1>{NUM})\s+(?:(?:complete|full|consecutive|whole|core|bus)\s+)*"
    rf"(?P<u1>(?:clock|clk)\s+cycles?|cycles?)\b"
    # "1 cycle less than the read latency", "3 cycles faster": a difference, not a length
    rf"(?!\s+(?:less|more|fewer|faster|slower|earlier|later|longer|shorter|than|before|after)\b)",
    re.IGNORECASE)
_OWNER = re.compile(r"^(?P<owner>.+?)\s+(?:(?:must|shall|should|will|may|can)\s+)?(?:have|has)\s+"
                    r"(?:an?|the)\s+(?P<thing>.+?)(?:\s+(?:that|which))?$", re.IGNORECASE)
_MENTION = re.compile(rf"(?<![\w.\-/])(?P<v1>{NUMBER_RE})\s*(?P<u1>{_UNIT})(?![\w/])")
_AMBIGUOUS_UNITS = {"in", "a", "A", "s", "b", "B", "g", "K", "J", "H", "F", "m"}
_QUANTITY = re.compile(r"\b(?:number|count|size|width|depth|length|maximum|minimum|latency|"
                       r"limit|rate|frequency|value|amount|total|capacity|resolution|increment|step|"
                       r"delay|period|duration|time|timeout|threshold|speed|throughput|bandwidth|"
                       r"voltage|current|power|temperature|capacitance|resistance)\b", re.IGNORECASE)
_FILLER = {"thus", "instead", "also", "only", "then", "hence", "therefore", "about", "approximately",
           "around", "nearly", "over", "under", "allowing", "allows", "e.g", "i.e", "see", "example"}
_PRONOUNS = {"it", "this", "that", "these", "those", "which", "there", "they", "he", "she",
             "its", "what", "who", "each", "one", "all", "both", "if", "when", "while",
             "because", "although", "since", "unless", "as", "where", "whether"}  # fmt: skip
_ARTICLES = re.compile(r"^(?:the|a|an|its|their|this|each)\s+", re.IGNORECASE)
_CONDITION_TAIL = re.compile(
    r"^\s*,?\s*((?:at|with|when|for|under|over|if|during|in|from|across|while)\b[^.;,]*)",
    re.IGNORECASE)
_VERB = re.compile(r"\b(?:is|are|was|were|shall|must|should|will)\b", re.IGNORECASE)
_CONDITION_HEAD = re.compile(r"^((?:with|at|when|for|under|in|during|if)\b[^,]{3,80}),\s*(.+)$",
                             re.IGNORECASE)
_STOP_TAIL = re.compile(r"(?<!\S)(?:with|which|that|is|are|was|were|to|for|of|in|on|at|by|from|and|"
                        r"or|as|than|per|can|may|must|shall|will|because|since|so|but|if|when|while|"
                        r"where|who|whose|although|after|before|until|unless|into|onto|through|"
                        r"between|each|now|then|also|only|takes?|has|have|uses?|allows?|provides?|"
                        r"supports?|requires?|needs?|means|gives|becomes|remains)(?!\S).*$",
                        re.IGNORECASE)
_LEAD_PREPOSITION = re.compile(r"^((?:for|with|at|when|in|under|during|if)\s.+?)\s+(?=the\s)",
                               re.IGNORECASE)
_CAPTION = re.compile(r"^(?:table|figure|fig\.|tab\.|section|chapter|example)\s", re.IGNORECASE)  # with <= 12 words


def _subject(raw: str) -> tuple[str, str] | None:
    """(subject, leading condition) of a statement, or None when it is no usable name."""
    subject = " ".join(raw.split())
    lead = ""
    head = _CONDITION_HEAD.match(subject) or _LEAD_PREPOSITION.match(subject)
    if head:
        lead = head.group(1)
        subject = head.group(2) if head.re is _CONDITION_HEAD else subject[head.end():]
    subject = re.split(r",\s+|\s+and\s+(?=the\b)|;\s*", subject)[-1]
    subject = _ARTICLES.sub("", subject).strip(" ,(")
    words = subject.split()
    if (not words or len(words) > 10 or words[0].lower() in _PRONOUNS
            or words[-1].lower() in _PRONOUNS or "=" in subject):
        return None
    if not re.search(r"[A-Za-z]{2}", subject) or re.search(r"\d\s*$", subject):
        return None
    return subject, lead


def _named_subject(raw: str) -> tuple[str, str] | None:
    """(name, leading condition) of a subject that may own what it states ("The clock input
    [CLK_I] MUST have a duty cycle that" -> "clock input [CLK_I] duty cycle") or start with a
    bracketed signal ("[RST_I]")."""
    owned = _OWNER.match(" ".join(raw.split()))
    if owned:
        owner, thing = _subject(owned.group("owner")), owned.group("thing").split()
        if owner is None or not thing or len(thing) > 4 or thing[0].lower() in _PRONOUNS:
            return None  # "It has a ...", "If the core has a ...", "a UART and the SPI controller"
        return f"{owner[0]} {' '.join(thing)}", owner[1]
    stripped = raw.strip()
    if re.fullmatch(r"\[[A-Za-z_][\w.:()\[\]]*\]", stripped):  # "[RST_I]": a signal's name
        return stripped, ""
    return _subject(raw)


def _noun_phrase(rest: str, last: int = 4) -> str:
    """The head noun phrase of the words after a number ("latency divider", "external
    interrupts"); a comma right after the number starts an adjective list ("9-stage,
    dual-issue, ... pipeline"), any other comma ends the phrase."""
    listed = rest.lstrip(" ").startswith(",")
    rest = rest.replace(",", " ") if listed else rest.split(",")[0]
    words = [w for w in _STOP_TAIL.sub("", rest).split() if w.lower() not in STOP_WORDS]
    return " ".join(words[-last:] if listed else words[:last])


def _before(line: str, start: int, n: int = 4) -> str:
    """Content words before ``start`` in its clause (the name of a bare mention)."""
    clause = re.split(r"[,;:()]|\.\s", line[:start])[-1]
    words = [w for w in re.findall(r"\w[\w/-]*", clause)
             if w.lower() not in STOP_WORDS and w.lower() not in _FILLER]
    return " ".join(words[-n:])


def _stats(value: str, match: re.Match[str]) -> tuple[str | None, str | None, str | None]:
    groups = match.groupdict()
    if groups.get("q_min"):
        return value, None, None
    if groups.get("q_max"):
        return None, None, value
    if groups.get("q_typ"):
        return None, value, None
    return None, None, None


def _tail(line: str, end: int) -> re.Match[str] | None:
    """The condition clause after a value, unless it is the next statement ("..., for a 16bit
    data array the increment is 2")."""
    tail = _CONDITION_TAIL.match(line[end:])
    return None if tail is None or _VERB.search(tail.group(1)) else tail


def _conditions(line: str, end: int, lead: str = "") -> str:
    tail = _tail(line, end)
    parts = [x.strip(" ,") for x in (lead, tail.group(1) if tail else "") if x and x.strip(" ,")]
    return "; ".join(parts)[:160]


def _property(line: str, i: int, rule: str, name: str, match: re.Match[str], *, lead: str = "",
              unit: str = "", vmin: str | None = None, vtyp: str | None = None,
              vmax: str | None = None, value: str = "") -> dict[str, Any]:
    v1 = match.group("v1").replace(" ", "")
    return raw_property(name, value or v1, rule, row=i, unit=unit, vmin=vmin, vtyp=vtyp, vmax=vmax,
                        conditions=_conditions(line, match.end(), lead),
                        extra=line if len(line) <= 240 else "")


def _unit(match: re.Match[str], *groups: str) -> str:
    for g in groups:
        unit = (match.groupdict().get(g) or "").strip()
        if unit and (unit == "%" or is_unit(unit)):
            return unit
    return ""


def _line_properties(line: str, i: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    claimed: list[tuple[int, int]] = []

    def free(m: re.Match[str]) -> bool:
        a, b = m.span("v1")
        return not any(a < y and x < b for x, y in claimed)

    def claim(m: re.Match[str], prop: dict[str, Any]) -> None:
        claimed.append(m.span("v1"))
        if m.groupdict().get("v2") is not None:
            claimed.append(m.span("v2"))
        tail = _tail(line, m.end())
        if tail:  # numbers of the conditions ("at 25 °C") are not properties of their own
            claimed.append((m.end(), m.end() + tail.end()))
        out.append(prop)

    for m in _BOUNDS.finditer(line):
        sub = _named_subject(m.group("subj"))
        unit = _unit(m, "u2", "u1")
        units = {u.strip() for u in (m.group("u1"), m.group("u2")) if u and u.strip()}
        if len(units) > 1:
            continue  # "at least 500 mV and at most 1.2 V": one unit per property, no conversion
        if sub and free(m) and (unit or _QUANTITY.search(sub[0])):
            v1, v2 = m.group("v1").replace(" ", ""), m.group("v2").replace(" ", "")
            lo, hi = (v1, v2) if m.group("lo1") else (v2, v1)
            if bool(m.group("lo1")) != bool(m.group("lo2")):  # one lower and one upper bound
                claim(m, _property(line, i, "sentence:bounds", sub[0], m, lead=sub[1], unit=unit,
                                   vmin=lo, vmax=hi, value=f"{lo} to {hi}"))
    for m in _CYCLES.finditer(line):
        sub = _named_subject(m.group("subj"))
        if sub and free(m):
            verb = m.group("verb") or ""
            name = f"{sub[0]} {verb.lower()}".strip() if verb else sub[0]
            unit = " ".join(m.group("u1").lower().split())
            unit = unit if "clock" in unit or "clk" in unit else "clock " + unit  # "cycles" of the clock
            vmin, vtyp, vmax = _stats(m.group("v1").replace(" ", ""), m)
            claim(m, _property(line, i, "sentence:cycles", name, m, lead=sub[1], unit=unit,
                               vmin=vmin, vtyp=vtyp, vmax=vmax))
    for m in _RANGE.finditer(line):
        unit, sub = _unit(m, "u2", "u1"), _subject(m.group("subj"))
        if unit and sub and free(m):
            lo, hi = m.group("v1").replace(" ", ""), m.group("v2").replace(" ", "")
            claim(m, _property(line, i, "sentence:range", sub[0], m, lead=sub[1], unit=unit,
                               vmin=lo, vmax=hi, value=f"{lo} to {hi}"))
    for m in _LIMIT.finditer(line):
        unit, sub = _unit(m, "u1"), _subject(m.group("subj"))
        if sub and free(m) and (unit or _QUANTITY.search(sub[0])):
            v = m.group("v1").replace(" ", "")
            low = re.search(r"less|lower|smaller|below", m.group("verb"), re.IGNORECASE)
            claim(m, _property(line, i, "sentence:limit", sub[0], m, lead=sub[1], unit=unit,
                               vmin=v if low else None, vmax=None if low else v))
    for m in _IS.finditer(line):
        unit, sub = _unit(m, "u2", "u1"), _subject(m.group("subj"))
        if not sub or not free(m) or not (unit or _QUANTITY.search(sub[0])):
            continue
        v1, v2 = m.group("v1").replace(" ", ""), m.group("v2")
        if v2:
            v2 = v2.replace(" ", "")
            claim(m, _property(line, i, "sentence:is", sub[0], m, lead=sub[1], unit=unit,
                               vmin=v1, vmax=v2, value=f"{v1} to {v2}"))
            continue
        vmin, vtyp, vmax = _stats(v1, m)
        name = sub[0].lower()
        if not (vmin or vtyp or vmax):
            vmax = v1 if re.search(r"\bmax(?:imum)?\b", name) else None
            vmin = v1 if re.search(r"\bmin(?:imum)?\b", name) else None
            vtyp = v1 if re.search(r"\btyp(?:ical)?\b", name) else None
        claim(m, _property(line, i, "sentence:is", sub[0], m, lead=sub[1], unit=unit, vmin=vmin,
                           vtyp=vtyp, vmax=vmax))
    for m in _EQUALS.finditer(line):
        if free(m) and (unit := _unit(m, "u1")) and re.search(r"[A-Za-z]", m.group("subj")):
            symbol = re.sub(r"^([A-Za-z])\s", r"\1", m.group("subj"))  # "V BS" (a subscript) -> "VBS"
            claim(m, _property(line, i, "sentence:equals", symbol, m, unit=unit))
    for m in _OF.finditer(line):
        sub = _subject(m.group("subj"))
        if sub and free(m) and ((unit := _unit(m, "u1")) or _QUANTITY.search(sub[0])):
            vmin, vtyp, vmax = _stats(m.group("v1").replace(" ", ""), m)
            claim(m, _property(line, i, "sentence:of", sub[0], m, unit=unit, vmin=vmin, vtyp=vtyp, vmax=vmax))
    for m in _COUNT.finditer(line):
        if not free(m):
            continue
        noun = _noun_phrase(m.group("rest"))
        unit = (m.group("u1") or m.group("u2") or "").strip()
        if m.group("v1").lower().startswith("0x") or unit in _AMBIGUOUS_UNITS:
            continue  # an address, or "0 in the ...": not a quantity
        plural = noun and noun.split()[-1].lower().endswith("s")
        if not noun or not (unit or (plural and any(m.groupdict().get(f"q_{q}") for q in ("min", "max")))):
            continue
        if m.group("u2") and not is_unit(unit):
            continue
        vmin, vtyp, vmax = _stats(m.group("v1").replace(" ", ""), m)
        claim(m, _property(line, i, "sentence:count", noun, m, unit=unit, vmin=vmin, vtyp=vtyp, vmax=vmax))
    for m in _MENTION.finditer(line):
        unit = m.group("u1")
        if free(m) and unit not in _AMBIGUOUS_UNITS and (unit == "%" or is_unit(unit)):
            name = _before(line, m.start())
            if name and re.search(r"[A-Za-z]{3}", name):
                claim(m, _property(line, i, "sentence:mention", name, m, unit=unit))
    return out


def sentence_properties(text: str) -> list[dict[str, Any]]:
    """Properties stated in the sentences of a prose chunk (one sentence per line)."""
    out: list[dict[str, Any]] = []
    for i, line in enumerate(ln for ln in text.split("\n") if ln.strip()):
        line = line.strip().lstrip("-• ").strip()
        if line.startswith("#") or (_CAPTION.match(line) and len(line.split()) <= 12):
            continue
        out.extend(_line_properties(line, i))
    return out


__all__ = ["sentence_properties"]
