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
a hash of (unit, form). Then up to ``rows_per_unit`` row-level queries (``row_queries``): one
parameter-table row ("What is the default value of `-max_length` for `repair_design`?",
"Which option of `repair_design` sets the maximum wire length?"), one variable row, one message
id, diagnostic sentence or log line, one procedure step ("After I read the design, what is the
next step for ...?"), each T_q being the type of the artifact the row comes from. Topics come from the anchor (a command or file name) or, for units
anchored on a section, from the section title. A query that reproduces a sentence of its unit
(or is contained in one) is dropped: no unit sentence is ever copied as a query.

LLM path: the ``training_queries`` task of the LLM layer (``edaqa_pipeline.llm``) asks a model
to write one question per requested unit-level form; its offline implementation IS the
template generator, so offline and LLM runs produce the same record shape (``source`` tells
them apart). Row-level queries are templates on both paths.

Split: 85/15 train/validation BY UNIT, decided by a deterministic hash. Units that share a
command or file anchor (a cross-document unit and the occurrence units it links) hash on the
anchor, so near-duplicate queries never straddle the split; section-anchored units hash on
their unit id. No unit is on both sides.

Queries are built from the indexed corpus only; nothing here reads an evaluation QA file.

Modules: ``unit_facts`` (what a unit offers), ``templates`` (the forms above),
``row_queries`` (the row-level forms), ``query_task`` (the LLM task), ``pair_schema``
(constants, table schema); this module builds the pairs table and its split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import polars as pl

from edaqa_pipeline.llm import LLMClient
from edaqa_pipeline.model import stable_id
from edaqa_pipeline.training.pair_schema import (
    DEFAULT_PER_UNIT,
    DEFAULT_ROWS_PER_UNIT,
    PAIRS_SCHEMA,
    TASK,
    TRAIN_FRACTION,
)
from edaqa_pipeline.training.query_task import TrainingQueries, task_inputs
from edaqa_pipeline.training.row_queries import row_queries
from edaqa_pipeline.training.templates import template_queries
from edaqa_pipeline.training.unit_facts import unit_facts


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
    rows_per_unit: int = DEFAULT_ROWS_PER_UNIT,
    client: LLMClient | None = None,
    train_fraction: float = TRAIN_FRACTION,
) -> pl.DataFrame:
    """One row per training query: the query, T_q, its positive unit and its split.

    ``units``: ``unit_hyperedges``; ``nodes``: ``unit_nodes``. Unit-level queries (``per_unit``)
    come from the ``training_queries`` task of an LLM ``client`` that is not offline (cached by
    the LLM layer), otherwise from the templates; row-level queries (``rows_per_unit``: table
    rows, diagnostics, procedure steps) always come from ``row_queries``. Rows are sorted by
    query id.
    """
    node_by_id = {r["node_id"]: r for r in nodes.select("node_id", "artifact_type", "content", "section_path").iter_rows(named=True)}
    use_llm = client is not None and client.provider != "offline"
    rows: list[dict[str, Any]] = []
    for unit in units.sort("unit_id").iter_rows(named=True):
        artifacts = [node_by_id[a] for a in unit["artifact_ids"] if a in node_by_id]
        if not artifacts:
            continue
        facts = unit_facts(unit, artifacts)
        if use_llm:
            assert client is not None
            result = client.complete_structured(TASK, task_inputs(unit, artifacts, per_unit), TrainingQueries)
            queries = [q.model_dump() | {"source": "llm"} for q in result.queries][:per_unit]
            queries += [q | {"source": "template"} for q in row_queries(facts, rows_per_unit)]
        else:
            queries = [q | {"source": "template"} for q in template_queries(facts, per_unit, rows_per_unit)]
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
                "source": q["source"],
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
