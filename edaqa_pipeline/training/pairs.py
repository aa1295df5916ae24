"""Training queries generated from functional units (paper: "Query-Unit Contrastive Alignment").

Each query is written FROM one unit, so the query and its positive unit share the target
artifact-type combination by construction; the query records ``required_types`` (``T_q``),
always a subset of the unit's types ``T(e)``.

Offline default: deterministic templates. A unit offers the query *forms* its artifacts
support (a form = a question shape plus the types it needs), for example:

===================  ====================  ============================================
form                 T_q                   needs
===================  ====================  ============================================
usage                codeblock, table      command synopsis + option table
option_limits        table, constraint     option table + a constraint sentence
usage_example        text, codeblock       description + code
procedure_commands   procedure, codeblock  procedure steps + code
file_example         file, codeblock       file anchor + code
options              table                 option table (first-column keys ``-x``)
option_lookup        table                 one option and the gist of its description
table_lookup         table                 other tables (header columns, row keys)
syntax / example     codeblock             code (synopsis when it starts with the anchor)
steps                procedure             procedure steps (their leading verbs)
constraints          constraint            constraint sentences
diagnostics          diagnostic            message ids / diagnostic sentences
files                file                  file names
figure               figure                figure captions
related_commands     inline_command        other commands named in the unit
purpose              text                  descriptive text
===================  ====================  ============================================

Combination forms come first (they carry the type combination the alignment is about), then
single-type forms; at most ``per_unit`` distinct queries per unit, wording variants chosen by
a hash of (unit, form). Topics come from the anchor (a command or file name) or, for units
anchored on a section, from the section title. A query that reproduces a sentence of its unit
(or is contained in one) is dropped: no unit sentence is ever copied as a query.

LLM path: the ``training_queries`` task of the LLM layer (``edaqa_pipeline.llm``) asks a model
to write one question per requested form; its offline implementation IS the template
generator, so offline and LLM runs produce the same record shape (``source`` tells them apart).

Split: 85/15 train/validation BY UNIT, decided by a deterministic hash. Units that share a
command or file anchor (a cross-document unit and the occurrence units it links) hash on the
anchor, so near-duplicate queries never straddle the split; section-anchored units hash on
their unit id. No unit is on both sides.

Queries are built from the indexed corpus only; nothing here reads an evaluation QA file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
from pydantic import BaseModel, Field

from edaqa_pipeline.extraction.patterns import MESSAGE_ID, OPTION, split_sentences
from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMClient, LLMTask, delimit, register_task
from edaqa_pipeline.model import ARTIFACT_TYPES, normalise_ws, stable_id

TASK = "training_queries"
TRAIN_FRACTION = 0.85
DEFAULT_PER_UNIT = 4

PAIRS_SCHEMA: dict[str, pl.DataType] = {
    "query_id": pl.String(),
    "query": pl.String(),
    "form": pl.String(),
    "required_types": pl.List(pl.String()),
    "unit_id": pl.String(),  # the positive unit e+
    "unit_types": pl.List(pl.String()),  # T(e+)
    "split_group": pl.String(),
    "split": pl.String(),  # train | val
    "source": pl.String(),  # template | llm
}


# ---------------------------------------------------------------------------------------------
# Facts a unit offers to the templates


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


def _cells(line: str) -> list[str]:
    return [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]


def _parse_table(content: str) -> tuple[list[str], list[list[str]]]:
    lines = [ln for ln in content.split("\n") if ln.strip()]
    if not lines:
        return [], []
    header = _cells(lines[0])
    body = lines[1:]
    if body and set(body[0].replace("|", "").strip()) <= set("-: "):
        body = body[1:]
    return header, [_cells(ln) for ln in body]


_STEP_PREFIX = re.compile(r"^\s*(?:\*\*)?\s*(?:step\s*\d+\s*[:.)]?|\d+[.)]|[-*+])\s*(?:\*\*)?\s*", re.I)
_MD = re.compile(r"<[^>]+>|[`*_]|\[([^\]]*)\]\([^)]*\)")
_OPTION_HEADER = re.compile(r"^(switch|argument|option|parameter|flag)s?( name)?$", re.I)


def _clean(text: str) -> str:
    return normalise_ws(_MD.sub(lambda m: m.group(1) or "", text))


def _phrase(description: str, max_words: int = 8) -> str:
    """The gist of an option description: its first clause, lower-cased, at most a few words."""
    first = re.split(r"[.;:(]|\s-\s", _clean(description), maxsplit=1)[0]
    words = first.split()[:max_words]
    if not words:
        return ""
    words[0] = words[0].lower() if not words[0].isupper() else words[0]
    return " ".join(words).rstrip(",")


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
    for art in artifacts:
        a_type, content = art["artifact_type"], art["content"] or ""
        sentences.extend(split_sentences(content))
        sentences.extend(ln for ln in content.split("\n") if ln.strip())
        if a_type == "table":
            header, rows = _parse_table(content)
            is_options = bool(header and _OPTION_HEADER.match(header[0])) or any(
                r and OPTION.match(r[0]) for r in rows)
            for row in rows:
                if not row or not row[0]:
                    continue
                if is_options and len(row) > 1 and re.fullmatch(r"-?[A-Za-z][\w.-]*", row[0]):
                    options.append((row[0], row[1]))
                elif not is_options:
                    keys.append(row[0])
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
        sentences=sentences,
    )


# ---------------------------------------------------------------------------------------------
# Templates


def _pick(options: Sequence[str], key: str) -> str:
    h = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16)
    return options[h % len(options)]


def _thing(f: UnitFacts) -> str:
    """How to name the unit's subject inside a question."""
    if f.anchor_kind == "command":
        return f"the {f.topic} command"
    if f.anchor_kind == "file":
        return f"the file {f.topic}"
    return f"{f.topic} in {f.context}" if f.context else f.topic


def _verb(step: str) -> str:
    words = step.split()
    return words[0].lower() if words and words[0][:1].isalpha() else ""


def _form_texts(f: UnitFacts) -> list[tuple[str, tuple[str, ...], list[str]]]:
    """(form, T_q, wording variants) for every form the unit supports, in priority order."""
    t = set(f.types)
    thing, topic = _thing(f), f.topic
    cmd = f.anchor_kind == "command"
    opts = [o for o, _ in f.options]
    out: list[tuple[str, tuple[str, ...], list[str]]] = []

    def add(form: str, types: tuple[str, ...], variants: list[str]) -> None:
        if set(types) <= t and variants:
            out.append((form, types, variants))

    # Combination forms.
    if opts and "codeblock" in t:
        two = " and ".join(f"`{o}`" for o in opts[:2])
        noun = "options" if opts[0].startswith("-") else "arguments"
        add("usage", ("codeblock", "table"), [
            f"How do I call {thing}, and what do the {noun} {two} mean?",
            f"What is the syntax of {topic} and which options does it take?",
            f"Give the usage of {topic} together with its switches such as {two}.",
        ])
    if opts and f.has_constraint:
        add("option_limits", ("constraint", "table"), [
            f"What values are allowed for the options of {topic}, and what restrictions apply?",
            f"Which limits or requirements apply to the switches of {thing}?",
        ])
    if "codeblock" in t and "text" in t and not f.steps:
        add("usage_example", ("codeblock", "text"), [
            f"What does {thing} do, and can you show an example?",
            f"Explain {topic} with a code example.",
            f"What is {topic} for, and how is it used in a script?",
        ])
    if f.steps and "codeblock" in t:
        add("procedure_commands", ("codeblock", "procedure"), [
            f"Which steps and commands are needed for {thing}?",
            f"Walk me through {topic}: what are the steps and the commands to run?",
        ])
    if f.anchor_kind == "file" and "codeblock" in t:
        add("file_example", ("codeblock", "file"), [
            f"What does {topic} contain, with an example of its contents?",
            f"Show an example of how {topic} is written or used.",
        ])
    # Single-type forms.
    if opts:
        add("options", ("table",), [
            f"What options does {thing} accept?",
            f"Which switches can be passed to {topic}?",
            f"List the parameters of {topic}.",
        ])
        opt, desc = f.options[int(hashlib.sha256(f.unit_id.encode()).hexdigest()[:6], 16) % len(f.options)]
        gist = _phrase(desc)
        noun = "option" if opt.startswith("-") else "argument"
        variants = [f"What does the `{opt}` {noun} of {topic} do?"]
        if gist:
            variants.append(f"Which option of {topic} controls {gist}?")
        if "default" in desc.lower():
            variants.append(f"What is the default of `{opt}` in {topic}?")
        add("option_lookup", ("table",), variants)
    elif f.table_headers or f.table_keys:
        cols = " and ".join(h.lower() for h in f.table_headers[:2] if h)
        rows = ", ".join(f.table_keys[:2])
        variants = []
        if cols:
            variants.append(f"Which table gives the {cols} for {thing}?")
        if rows:
            variants.append(f"What does the table for {topic} say about {rows}?")
        add("table_lookup", ("table",), variants)
    if f.code_first:
        if f.synopsis:
            add("syntax", ("codeblock",), [
                f"What is the syntax of {topic}?",
                f"How do I invoke {topic} from the Tcl shell?",
            ])
        else:
            add("example", ("codeblock",), [
                f"Show an example script for {thing}.",
                f"What commands do I run for {thing}?",
                f"Is there a code example for {topic}?",
            ])
    if f.steps:
        verbs = [v for v in dict.fromkeys(_verb(s) for s in f.steps) if v][:3]
        variants = [f"What are the steps for {thing}?", f"In what order do I proceed for {topic}?"]
        if len(verbs) >= 2:
            variants.append(f"In which order should I {', '.join(verbs[:-1])} and {verbs[-1]} for {topic}?")
        add("steps", ("procedure",), variants)
    add("constraints", ("constraint",), [
        f"What restrictions or requirements apply to {thing}?",
        f"What must hold when using {topic}?",
        f"Are there limits I should know about for {topic}?",
    ])
    if f.message_ids:
        mid = f.message_ids[0]
        add("diagnostics", ("diagnostic",), [f"What does the message {mid} mean for {topic}?",
                                             f"Why would {mid} be reported?"])
    else:
        add("diagnostics", ("diagnostic",), [f"What errors or warnings are mentioned for {thing}?",
                                             f"Which diagnostics relate to {topic}?"])
    if f.files:
        add("files", ("file",), [f"Which files are involved in {thing}?",
                                 f"What file names does {topic} refer to, such as {f.files[0]}?"])
    if f.captions:
        add("figure", ("figure",), [f"Is there a figure illustrating {thing}?",
                                    f"Which screenshot or diagram shows {f.captions[0].lower()}?"])
    if f.commands:
        other = f.commands[0]
        add("related_commands", ("inline_command",), [
            f"How does {topic} relate to `{other}`?",
            f"Which other commands are used together with {topic}?",
        ])
    if cmd:
        purpose = [f"What does the {topic} command do?", f"What is {topic} used for?"]
    elif f.anchor_kind == "file":
        purpose = [f"What is {topic} used for?", f"What role does {topic} play?"]
    else:
        purpose = [f"What does the documentation explain about {thing}?", f"Give an overview of {thing}."]
    add("purpose", ("text",), purpose)
    return out


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def copies_unit_text(query: str, sentences: Sequence[str]) -> bool:
    """True if the query equals a unit sentence (or line) or is contained in one."""
    q = _norm(query)
    if not q:
        return True
    for s in sentences:
        n = _norm(s)
        if n == q or (len(q) >= 20 and q in n):
            return True
    return False


def template_queries(facts: UnitFacts, per_unit: int = DEFAULT_PER_UNIT) -> list[dict[str, Any]]:
    """Up to ``per_unit`` distinct queries (form, query, required_types) for one unit."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for form, types, variants in _form_texts(facts):
        if len(out) >= per_unit:
            break
        query = normalise_ws(_pick(variants, f"{facts.unit_id}|{form}"))
        if _norm(query) in seen or copies_unit_text(query, facts.sentences):
            continue
        seen.add(_norm(query))
        out.append({"form": form, "query": query, "required_types": sorted(types)})
    return out


# ---------------------------------------------------------------------------------------------
# The LLM task (offline implementation = the templates)


class TrainingQuery(BaseModel):
    form: str
    query: str = Field(min_length=8)
    required_types: list[str] = Field(min_length=1)


class TrainingQueries(BaseModel):
    """Response record of the ``training_queries`` task."""

    queries: list[TrainingQuery] = Field(default_factory=list)


SYSTEM_PROMPT = (
    "You write realistic user questions about EDA tool documentation, used to train a "
    "retriever. You receive one functional unit (its anchor, its artifact types and a "
    "summary) and a list of requested forms, each with the artifact types the question must "
    "need. For each form write one question a user could ask whose answer needs exactly those "
    "artifact types of this unit. Do not copy sentences from the unit; paraphrase, and name "
    "the command or topic. Keep each question under 30 words. " + DATA_NOT_INSTRUCTIONS
)


def _task_inputs(unit: Mapping[str, Any], artifacts: Sequence[Mapping[str, Any]], per_unit: int) -> dict[str, Any]:
    return {
        "unit": {k: unit[k] for k in ("unit_id", "anchor", "anchor_kind", "summary")}
        | {"artifact_types": list(unit["artifact_types"])},
        "artifacts": [{"artifact_type": a["artifact_type"], "content": a["content"],
                       "section_path": list(a.get("section_path") or [])} for a in artifacts],
        "per_unit": per_unit,
    }


def _render(inputs: Mapping[str, Any]) -> str:
    unit = inputs["unit"]
    facts = unit_facts(unit, inputs["artifacts"])
    forms = "\n".join(f"- {form}: needs {', '.join(types)}" for form, types, _ in _form_texts(facts))
    return (
        f"Anchor: {unit['anchor']} ({unit['anchor_kind']})\n"
        f"Artifact types: {', '.join(unit['artifact_types'])}\n"
        f"Write up to {inputs['per_unit']} questions, one per form, in this order:\n{forms}\n"
        f"Unit summary:\n{delimit(unit['summary'])}"
    )


def _offline(inputs: Mapping[str, Any]) -> BaseModel:
    facts = unit_facts(inputs["unit"], inputs["artifacts"])
    return TrainingQueries(queries=[TrainingQuery(**q) for q in template_queries(facts, inputs["per_unit"])])


def _validate(result: BaseModel, inputs: Mapping[str, Any]) -> None:
    assert isinstance(result, TrainingQueries)
    types = set(inputs["unit"]["artifact_types"])
    facts = unit_facts(inputs["unit"], inputs["artifacts"])
    for q in result.queries:
        bad = set(q.required_types) - types
        if bad:
            raise ValueError(f"query {q.query!r} requires types {sorted(bad)} the unit lacks")
        if set(q.required_types) - set(ARTIFACT_TYPES):
            raise ValueError(f"unknown artifact types in {q.required_types}")
        if copies_unit_text(q.query, facts.sentences):
            raise ValueError(f"query {q.query!r} copies a sentence of the unit")


register_task(LLMTask(name=TASK, system_prompt=SYSTEM_PROMPT, render_user=_render, offline=_offline,
                      validate=_validate))


# ---------------------------------------------------------------------------------------------
# The pairs table


def split_group(unit: Mapping[str, Any]) -> str:
    """Units sharing a command/file anchor split together; section units split alone."""
    if unit["anchor_kind"] in ("command", "file"):
        return f"anchor:{unit['anchor']}"
    return f"unit:{unit['unit_id']}"


def split_of(group: str, train_fraction: float = TRAIN_FRACTION) -> str:
    bucket = int(hashlib.sha256(group.encode("utf-8")).hexdigest()[:8], 16) % 10_000
    return "train" if bucket < round(train_fraction * 10_000) else "val"


def build_pairs(
    units: pl.DataFrame,
    nodes: pl.DataFrame,
    *,
    per_unit: int = DEFAULT_PER_UNIT,
    client: LLMClient | None = None,
    train_fraction: float = TRAIN_FRACTION,
) -> pl.DataFrame:
    """One row per training query: the query, T_q, its positive unit and its split.

    ``units``: ``unit_hyperedges``; ``nodes``: ``unit_nodes``. With an LLM ``client`` that is
    not offline, queries come from the ``training_queries`` task (cached by the LLM layer);
    otherwise from the templates. Rows are sorted by query id.
    """
    node_by_id = {r["node_id"]: r for r in nodes.select("node_id", "artifact_type", "content", "section_path").iter_rows(named=True)}
    use_llm = client is not None and client.provider != "offline"
    rows: list[dict[str, Any]] = []
    for unit in units.sort("unit_id").iter_rows(named=True):
        artifacts = [node_by_id[a] for a in unit["artifact_ids"] if a in node_by_id]
        if not artifacts:
            continue
        if use_llm:
            assert client is not None
            result = client.complete_structured(TASK, _task_inputs(unit, artifacts, per_unit), TrainingQueries)
            queries = [q.model_dump() for q in result.queries][:per_unit]
            source = "llm"
        else:
            queries = template_queries(unit_facts(unit, artifacts), per_unit)
            source = "template"
        group = split_group(unit)
        split = split_of(group, train_fraction)
        for q in queries:
            rows.append({
                "query_id": stable_id("tq", unit["unit_id"], q["form"], q["query"]),
                "query": q["query"],
                "form": q["form"],
                "required_types": sorted(q["required_types"]),
                "unit_id": unit["unit_id"],
                "unit_types": sorted(unit["artifact_types"]),
                "split_group": group,
                "split": split,
                "source": source,
            })
    if not rows:
        return pl.DataFrame(schema=PAIRS_SCHEMA)
    return pl.DataFrame(rows, schema=PAIRS_SCHEMA).unique("query_id", keep="first").sort("query_id")


def split_problems(pairs: pl.DataFrame) -> list[str]:
    """Units (or split groups) present on both sides of the split; empty when clean."""
    problems = []
    for column in ("unit_id", "split_group"):
        both = pairs.group_by(column).agg(pl.col("split").n_unique().alias("n")).filter(pl.col("n") > 1)
        if both.height:
            problems.append(f"{both.height} {column} values on both sides, e.g. {both[column][0]}")
    return problems
