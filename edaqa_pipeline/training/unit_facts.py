"""What a functional unit offers a training query: its anchor, option-table rows, variable
rows, synopsis, procedure steps, constraints, message ids, diagnostic texts and log lines,
files, captions, commands and sentences. What counts as an option, a variable or a message id
is ``text.identifiers``' definition."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from edaqa_pipeline.model import normalise_ws
from edaqa_pipeline.text.identifiers import DIAGNOSTIC_PREFIX, MESSAGE_ID, OPTION, VARIABLE
from edaqa_pipeline.text.markup import is_table_rule, table_cells
from edaqa_pipeline.text.sentences import split_sentences


@dataclass
class UnitFacts:
    unit_id: str
    anchor: str
    anchor_kind: str
    types: list[str]
    topic: str  # "`repair_design`" or a section title
    context: str  # tool / top-level section, "" if same as topic
    options: list[tuple[str, str]]  # (option, description) from option tables
    table_headers: list[str]
    table_keys: list[str]
    code_first: str
    synopsis: bool  # the code starts with the anchor command
    steps: list[str]  # procedure steps (cleaned)
    has_constraint: bool
    message_ids: list[str]
    files: list[str]
    captions: list[str]
    commands: list[str]  # inline commands other than the anchor
    sentences: list[str]  # every sentence of the unit, for the copy check
    variables: list[tuple[str, str]] = field(default_factory=list)  # (VARIABLE, description) rows
    diagnostics: list[str] = field(default_factory=list)  # first sentence of diagnostic artifacts
    log_lines: list[str] = field(default_factory=list)  # ERROR/WARNING lines inside code blocks
    message_types: dict[str, str] = field(default_factory=dict)  # message id -> artifact type


def _cells(line: str) -> list[str]:
    return [c.strip("`").strip() for c in table_cells(line)]


def _parse_table(content: str) -> tuple[list[str], list[list[str]]]:
    lines = [ln for ln in content.split("\n") if ln.strip()]
    if not lines:
        return [], []
    header = _cells(lines[0])
    body = lines[1:]
    if body and is_table_rule(body[0]):
        body = body[1:]
    return header, [_cells(ln) for ln in body]


_STEP_PREFIX = re.compile(r"^\s*(?:\*\*)?\s*(?:step\s*\d+\s*[:.)]?|\d+[.)]|[-*+])\s*(?:\*\*)?\s*", re.I)
_MD = re.compile(r"<[^>]+>|[`*_]|\[([^\]]*)\]\([^)]*\)")
_OPTION_HEADER = re.compile(r"^(switch|argument|option|parameter|flag)s?( name)?$", re.I)


def _clean(text: str) -> str:
    return normalise_ws(_MD.sub(lambda m: m.group(1) or "", text))


def short_phrase(description: str, max_words: int = 8) -> str:
    """The gist of an option description: its first clause, lower-cased, at most a few words."""
    first = re.split(r"[.;:(]|\s-\s", _clean(description), maxsplit=1)[0]
    words = first.split()[:max_words]
    if not words:
        return ""
    words[0] = words[0].lower() if not words[0].isupper() else words[0]
    return " ".join(words).rstrip(",")


def normalised(text: str) -> str:
    """Lower case, runs of non-alphanumerics as one space: what the copy guard compares."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def copies_unit_text(query: str, sentences: Sequence[str]) -> bool:
    """True if the query equals a unit sentence (or line) or is contained in one: no training
    query may be a copy of the text it should retrieve."""
    q = normalised(query)
    if not q:
        return True
    for s in sentences:
        n = normalised(s)
        if n == q or (len(q) >= 20 and q in n):
            return True
    return False


def unit_facts(unit: Mapping[str, Any], artifacts: Sequence[Mapping[str, Any]]) -> UnitFacts:
    """What the templates may use from one unit (``artifacts``: its unit_nodes rows)."""
    anchor, kind = unit["anchor"], unit["anchor_kind"]
    sections = [list(a.get("section_path") or []) for a in artifacts]
    first_path = next((p for p in sections if p), [])
    if kind == "section":
        path = anchor.removeprefix("section:").split(" > ")
        topic = _clean(path[-1])
        context = _clean(path[0]) if len(path) > 1 else ""
    else:
        topic = f"`{anchor}`"
        context = first_path[0] if first_path else ""
    options: list[tuple[str, str]] = []
    headers: list[str] = []
    keys: list[str] = []
    code_first = ""
    steps: list[str] = []
    message_ids: list[str] = []
    files: list[str] = []
    captions: list[str] = []
    commands: list[str] = []
    sentences: list[str] = []
    variables: list[tuple[str, str]] = []
    diagnostics: list[str] = []
    log_lines: list[str] = []
    message_types: dict[str, str] = {}
    for art in artifacts:
        a_type, content = art["artifact_type"], art["content"] or ""
        sentences.extend(split_sentences(content))
        sentences.extend(ln for ln in content.split("\n") if ln.strip())
        for mid in MESSAGE_ID.findall(content):
            message_types.setdefault(mid, a_type)
        if a_type == "codeblock":
            log_lines.extend(ln.strip() for ln in content.split("\n")
                             if DIAGNOSTIC_PREFIX.search(ln.strip()) and len(ln.split()) >= 4
                             and ln.strip() not in log_lines)
        if a_type == "table":
            header, rows = _parse_table(content)
            is_options = bool(header and _OPTION_HEADER.match(header[0])) or any(
                r and OPTION.fullmatch(r[0]) for r in rows)
            for row in rows:
                if not row or not row[0]:
                    continue
                if is_options and len(row) > 1 and re.fullmatch(r"-?[A-Za-z][\w.-]*", row[0]):
                    options.append((row[0], row[1]))
                elif not is_options:
                    keys.append(row[0])
                    if len(row) > 1 and VARIABLE.fullmatch(row[0]) and row[1]:
                        variables.append((row[0].lstrip("$"), row[1]))
            if not is_options:
                headers.extend(h for h in header if h and h not in headers)
        elif a_type == "codeblock" and not code_first:
            code_first = next((ln.strip() for ln in content.split("\n") if ln.strip()), "")
        elif a_type == "procedure":
            step = _clean(_STEP_PREFIX.sub("", content.split("\n")[0]))
            if step:
                steps.append(step)
        elif a_type == "diagnostic":
            message_ids.extend(m for m in MESSAGE_ID.findall(content) if m not in message_ids)
            first = _clean(next(iter(split_sentences(content)), ""))
            if len(first.split()) >= 4 and first not in diagnostics:
                diagnostics.append(first)
        elif a_type == "file":
            name = content.strip().split("/")[-1]
            if name and name != anchor and name not in files:
                files.append(name)
        elif a_type == "figure":
            cap = re.sub(r"\s*\([^)]*\)\s*$", "", content).strip()
            if len(cap.split()) >= 2 and cap not in captions:
                captions.append(cap)
        elif a_type == "inline_command":
            cmd = content.strip()
            if cmd and cmd != anchor and cmd not in commands and " " not in cmd:
                commands.append(cmd)
    synopsis = kind == "command" and code_first.split(" ")[0] == anchor
    return UnitFacts(
        unit_id=unit["unit_id"], anchor=anchor, anchor_kind=kind, types=sorted(unit["artifact_types"]),
        topic=topic, context=context if context and context not in topic else "",
        options=options, table_headers=headers, table_keys=keys, code_first=code_first,
        synopsis=synopsis, steps=steps, has_constraint="constraint" in unit["artifact_types"],
        message_ids=message_ids, files=files, captions=captions, commands=commands,
        sentences=sentences, variables=variables, diagnostics=diagnostics, log_lines=log_lines,
        message_types=message_types,
    )
