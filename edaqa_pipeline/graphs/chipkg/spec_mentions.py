"""Entity mentions in circuit-specification sentences: modules, signals, registers, fields,
FSM states and parameters (the entity types of ChipMind's ChipKG).

Specifications name their entities in a few regular ways, which these rules follow (examples
from the Wishbone B3 spec and the VeeR EH1 programmer's reference manual):

* port signals with a direction suffix: ``ACK_O``, ``DAT_I()``, ``CTI_O(2:0)`` (bit ranges and
  empty parentheses dropped from the canonical form);
* a name followed by its kind: "the ``cpu_halt_req`` signal", "the dcsr register", "the cause
  field of the core's dcsr register" (field ``dcsr.cause``), "the TAP controller" (module),
  "the PARAM parameter";
* quoted FSM states: "enter 'db-halt'", "'pmu/fw-halt' state";
* everything the document defines in its tables and headings (register maps, signal tables,
  parameter tables, signal headings): the document ``vocabulary``, matched by whole token.

A name qualifies when it looks like an identifier (an underscore, a digit, all capitals) or
the document defines it; an English word before "register" ("the control register") does not,
nor does the word before a plural ("the MASTER signals" are the signals of the MASTER).
Canonical forms: signals and parameters as written, registers, fields and states lower case,
fields qualified by their register (``mrac.cacheabley``).
"""

from __future__ import annotations

import re

from edaqa_pipeline.graphs.chipkg.mentions import Mention, unique
from edaqa_pipeline.text.identifiers import PORT_SIGNAL
from edaqa_pipeline.text.tokens import STOP_WORDS, TOKEN

_KIND_WORDS = {
    "signal": "signal", "signals": "signal", "register": "register", "registers": "register",
    "csr": "register", "csrs": "register", "field": "field", "fields": "field", "bit": "field",
    "parameter": "parameter", "parameters": "parameter", "module": "module", "modules": "module",
    "unit": "module", "controller": "module", "core": "module", "block": "module",
    "state": "fsm_state",
}  # fmt: skip
NAMED_ENTITY = re.compile(
    r"(?<![\w./-])([A-Za-z][A-Za-z0-9_./-]*[A-Za-z0-9_])\s+(" + "|".join(_KIND_WORDS) + r")\b",
    re.IGNORECASE,
)
_QUOTE = "[\u2018\u2019'\"`]"
QUOTED_STATE = re.compile(
    rf"\b(?:enters?|entering|exits?|exiting|leaves?|leaving)\s+(?:the\s+)?{_QUOTE}([A-Za-z][\w/-]{{1,24}}){_QUOTE}"
    rf"|{_QUOTE}([A-Za-z][\w/-]{{1,24}}){_QUOTE}\s+(?:state|mode)\b"
)
# "Region Access Control Register (mrac, at CSR 0x7C0)", "... Register (micect)"
REGISTER_IN_TITLE = re.compile(r"\bRegister\s*\(\s*([A-Za-z][A-Za-z0-9_]*)\s*[,)]", re.IGNORECASE)
_FIELD_OF = re.compile(
    r"\s+of\s+(?:the\s+)?(?:[\w-]+\u2019s\s+|[\w-]+'s\s+)?([A-Za-z][A-Za-z0-9_]*)\s+(?:register|csr)\b",
    re.IGNORECASE,
)
# acronyms that precede "core" / "block" without naming a module of the design
GENERIC_ACRONYMS = frozenset({"IP", "SOC", "RTL", "HDL", "ASIC", "FPGA", "CPU", "RISC-V"})
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_PLURALS = frozenset({"signals", "registers", "csrs", "fields", "parameters", "modules"})


def identifier_like(name: str) -> bool:
    """A name (letters, digits, underscores) with an underscore or a digit, or all capitals
    (two letters at least)."""
    if not NAME.fullmatch(name):
        return False
    return "_" in name or any(c.isdigit() for c in name) or (name.isupper() and len(name) >= 2)


def signal_name(raw: str) -> str:
    """``DAT_I(7..0)`` -> ``DAT_I``; ``CTI_O(2:0)`` -> ``CTI_O``."""
    return re.sub(r"\(.*$", "", raw.strip()).strip()


def spec_canonical(name: str, etype: str, register: str = "") -> str:
    """Canonical form of a spec entity (see the module docstring)."""
    if etype == "signal":
        return signal_name(name)
    if etype in ("register", "fsm_state"):
        return name.lower()
    if etype == "field":
        return f"{register.lower()}.{name.lower()}" if register else name.lower()
    return name


def vocabulary_entry(name: str, etype: str, register: str = "") -> tuple[str, tuple[str, str]]:
    """(token key, (type, canonical)) of a name the document defines."""
    base = signal_name(name) if etype == "signal" else name
    return base.lower(), (etype, spec_canonical(base, etype, register))


def _named(text: str, vocabulary: dict[str, tuple[str, str]], scope: str, scope_type: str) -> list[Mention]:
    out = []
    for m in NAMED_ENTITY.finditer(text):
        name, etype = m.group(1), _KIND_WORDS[m.group(2).lower()]
        known = vocabulary.get(name.lower())
        if name.lower() in STOP_WORDS or (m.group(2).lower() in _PLURALS and "_" not in name):
            continue
        if etype == "fsm_state":
            if identifier_like(name) or (known and known[0] == "fsm_state"):
                out.append(Mention(name, etype, spec_canonical(name, etype), m.start(1)))
            continue
        if etype == "module" and (name.upper() in GENERIC_ACRONYMS or not identifier_like(name)):
            continue
        if etype == "field":
            of = _FIELD_OF.match(text, m.end())
            register = of.group(1) if of else (scope if scope_type == "register" else "")
            if identifier_like(name) or known or of:
                out.append(Mention(name, etype, spec_canonical(name, etype, register), m.start(1)))
            continue
        if known is not None:
            out.append(Mention(name, known[0], known[1], m.start(1)))
        elif identifier_like(name) and (etype != "signal" or "_" in name):  # "a WISHBONE signal"
            out.append(Mention(name, etype, spec_canonical(name, etype), m.start(1)))
    return out


def spec_mentions(text: str, vocabulary: dict[str, tuple[str, str]] | None = None, scope: str = "",
                  scope_type: str = "") -> list[Mention]:
    """Entities of a specification sentence (rules of the module docstring), in text order."""
    vocabulary = vocabulary or {}
    found: list[Mention] = []
    for m in PORT_SIGNAL.finditer(text):
        found.append(Mention(m.group(0), "signal", signal_name(m.group(1)), m.start()))
    found += _named(text, vocabulary, scope, scope_type)
    for m in QUOTED_STATE.finditer(text):
        name = m.group(1) or m.group(2)
        found.append(Mention(name, "fsm_state", name.lower(), m.start()))
    for m in REGISTER_IN_TITLE.finditer(text):
        found.append(Mention(m.group(1), "register", m.group(1).lower(), m.start(1)))
    if vocabulary:
        for m in TOKEN.finditer(text):
            hit = vocabulary.get(m.group(0).lower())
            if hit is not None:
                found.append(Mention(m.group(0), hit[0], hit[1], m.start()))
    return unique(found)
