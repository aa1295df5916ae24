"""Hierarchical hardware knowledge graphs: routing and iterative refinement (paper I-C, I-D).

One graph per document (a datasheet describes one device or series). The graph starts from
the category's skeleton (``skeletons.py``) under a root block named after the document;
then, all through validated instructions (``instructions.py``):

1. **routing** -- properties in batches of ``route_batch``: ``CREATE_BLOCK`` / ``ATTACH``;
2. for ``iterations`` rounds (default 3):

   a. **refinement** -- per block, its properties in batches of ``refine_batch``:
      ``MERGE`` duplicates, ``RENAME`` same-named different specifications, ``KEEP``;
   b. **rerouting** -- every property against the latest hierarchy: ``ATTACH`` to a better
      block, ``CREATE_BLOCK`` when needed;

3. **final guarantee** -- offline refinement of whatever name conflict or exact duplicate is
   left (only ever non-empty after a model that did not converge), so the published graph
   never has two properties with one name in one block.

Offline rules (the default, deterministic):

* *routing* -- section path / table title to block: the deepest heading (else the table
  title) that matches a skeleton block's keywords picks the block; headings from there down
  become blocks under it (at most ``max_chain``: the matched one and the leaf), unless the
  heading just names the block ("Specifications" under "Electrical Characteristics");
  nothing matches: "General" plus the last two headings. The row item of an item x
  attribute table (an I/O cell such as ``sg13g2_IOPadIn``) becomes a block below that.
* *merging* -- same name + same value (value, min, typ, max) + same unit + same conditions
  (normalised): ``MERGE`` into the earliest; *renaming* -- remaining same-named properties get
  the first qualifier that tells them apart (symbol, conditions, table title, value, page and
  row), the earliest keeps its name.
* *rerouting* -- a property moves to a descendant block whose name (or its parenthesised
  acronym) occurs in the property's name or conditions; a property left in "General",
  "Electrical Characteristics" (document sections, not functions) or the root moves to the
  functional block whose skeleton keywords match its name ("Output voltage" -> Output).

With an LLM configured the same three tasks (``datasheet_route``, ``datasheet_refine``) go
through the LLM layer with the same instruction schema; properties a model leaves unrouted
are routed by the offline rule (logged as ``offline-fallback``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from edaqa_pipeline.extraction.datasheets.skeletons import SkeletonBlock, iter_blocks, skeleton
from edaqa_pipeline.extraction.datasheets.textutil import normalise, strip_numbering
from edaqa_pipeline.graphs.hwkg.instructions import (
    MAX_NAME,
    REFINE_OPS,
    ROUTE_OPS,
    HardwareKG,
    Instruction,
    InstructionList,
    block_id_for,
)
from edaqa_pipeline.llm import (
    DATA_NOT_INSTRUCTIONS,
    LLMClient,
    LLMError,
    LLMTask,
    delimit,
    register_task,
)
from edaqa_pipeline.model import BBOX, STRS

ROUTE_TASK = "datasheet_route"
REFINE_TASK = "datasheet_refine"
GENERAL = "General"
# Skeleton blocks named after document sections rather than hardware functions: rerouting may
# move their properties to a functional block whose keywords match the property name.
GENERIC_BLOCKS = (GENERAL, "Electrical Characteristics")


@dataclass
class KGConfig:
    iterations: int = 3
    route_batch: int = 20
    refine_batch: int = 30
    max_chain: int = 2


# ---------------------------------------------------------------------------------------------
# Output tables

HARDWARE_KGS_SCHEMA: dict[str, pl.DataType] = {
    "kg_id": pl.String(),  # the document the graph was built from
    "node_id": pl.String(),
    "node_type": pl.String(),  # block | property
    "name": pl.String(),  # block name / property display name (after RENAME)
    "parent_id": pl.String(),  # block: parent block; property: the block it is attached to
    "path": STRS,  # block names from the root down to the node's block
    "depth": pl.Int64(),
    "origin": pl.String(),  # root | skeleton | created | extracted
    "category": pl.String(),
    "status": pl.String(),  # active | merged (merged properties keep no block)
    "merged_into": pl.String(),
    "merged_from": STRS,
    "original_name": pl.String(),
    "symbol": pl.String(),
    "description": pl.String(),
    "value": pl.String(),
    "value_min": pl.String(),
    "value_typ": pl.String(),
    "value_max": pl.String(),
    "unit": pl.String(),
    "conditions": pl.String(),
    "document": pl.String(),
    "chunk_id": pl.String(),
    "page": pl.Int64(),
    "bbox": BBOX,
    "rule": pl.String(),
}

INSTRUCTIONS_SCHEMA: dict[str, pl.DataType] = {
    "kg_id": pl.String(),
    "seq": pl.Int64(),
    "stage": pl.String(),  # skeleton | route | refine | reroute | final
    "iteration": pl.Int64(),
    "batch": pl.String(),
    "source": pl.String(),  # skeleton | offline | offline-fallback | llm:<task>
    "op": pl.String(),
    "args": pl.String(),  # JSON of the instruction's fields
    "status": pl.String(),  # applied | noop | rejected
    "reason": pl.String(),
}


def _frame(rows: list[dict[str, Any]], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    if not rows:
        return pl.DataFrame(schema=schema)
    return pl.DataFrame(rows, schema=schema, strict=False).select(list(schema))


def kg_nodes(kg: HardwareKG) -> list[dict[str, Any]]:
    """Rows of HARDWARE_KGS_SCHEMA: blocks in depth-first order, then properties."""
    rows: list[dict[str, Any]] = []
    for entry in kg.hierarchy():
        bid = entry["id"]
        block = kg.blocks[bid]
        rows.append(
            {
                "kg_id": kg.kg_id,
                "node_id": bid,
                "node_type": "block",
                "name": block.name,
                "parent_id": block.parent_id,
                "path": kg.path(bid),
                "depth": kg.depth(bid),
                "origin": block.origin,
                "category": kg.category,
                "status": "active",
                "merged_into": None,
                "merged_from": [],
                "original_name": block.name,
                "document": kg.kg_id,
            }
        )
    for pid, rec in kg.records.items():
        st = kg.state[pid]
        block = st.block_id
        rows.append(
            {
                "kg_id": kg.kg_id,
                "node_id": pid,
                "node_type": "property",
                "name": st.name,
                "parent_id": block,
                "path": kg.path(block) if block else [],
                "depth": kg.depth(block) + 1 if block else None,
                "origin": "extracted",
                "category": kg.category,
                "status": st.status,
                "merged_into": st.merged_into,
                "merged_from": list(st.merged_from),
                "original_name": rec["name"],
                **{
                    k: rec.get(k)
                    for k in (
                        "symbol",
                        "description",
                        "value",
                        "value_min",
                        "value_typ",
                        "value_max",
                        "unit",
                        "conditions",
                        "document",
                        "chunk_id",
                        "page",
                        "bbox",
                        "rule",
                    )
                },
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Offline routing


def _keyword_rx(keyword: str) -> re.Pattern[str]:
    return re.compile(r"(?<![a-z0-9])" + keyword, re.IGNORECASE)


@dataclass(frozen=True)
class _SkelIndex:
    entries: tuple[tuple[tuple[str, ...], SkeletonBlock, tuple[re.Pattern[str], ...]], ...]

    def match(self, text: str) -> tuple[tuple[str, ...], SkeletonBlock] | None:
        """The skeleton block whose keyword matches ``text`` best: longest match, then
        deepest block, then declaration order."""
        norm = normalise(text)
        best: tuple[int, int, int] | None = None
        found = None
        for order, (path, block, rxs) in enumerate(self.entries):
            for rx in rxs:
                m = rx.search(norm)
                if m:
                    score = (len(m.group(0)), len(path), -order)
                    if best is None or score > best:
                        best, found = score, (path, block)
        return found


_INDEXES: dict[str, _SkelIndex] = {}


def skeleton_index(category: str) -> _SkelIndex:
    if category not in _INDEXES:
        _INDEXES[category] = _SkelIndex(
            tuple(
                (path, block, tuple(_keyword_rx(k) for k in block.keywords))
                for path, block in iter_blocks(skeleton(category))
            )
        )
    return _INDEXES[category]


def route_path(
    category: str,
    section_path: list[str],
    table_title: str = "",
    max_chain: int = 2,
    entity: str = "",
) -> list[str]:
    """Block names under the root for a property with this section path / table title; the
    row item of an item x attribute table (an I/O cell) becomes the last block."""
    names = _section_route(category, section_path, table_title, max_chain)
    if entity and normalise(entity) not in {normalise(n) for n in names}:
        names.append(entity)
    return names


def _section_route(
    category: str, section_path: list[str], table_title: str, max_chain: int
) -> list[str]:
    index = skeleton_index(category)
    headings = [h for h in (strip_numbering(s) for s in section_path or []) if h]
    for i in range(len(headings) - 1, -1, -1):
        found = index.match(headings[i])
        if found is None:
            continue
        path, block = found
        chain = headings[i:]
        if normalise(chain[0]) in block.synonyms or normalise(chain[0]) == normalise(path[-1]):
            chain = chain[1:]
        if len(chain) > max_chain:
            chain = [*chain[: max(max_chain - 1, 0)], chain[-1]] if max_chain > 0 else []
        return [*path, *chain]
    if table_title:
        found = index.match(table_title)
        if found is not None:
            return list(found[0])
    chain = headings[-max_chain:] if max_chain > 0 else []
    return [GENERAL, *chain]


def offline_route(inputs: Mapping[str, Any]) -> InstructionList:
    """CREATE_BLOCK / ATTACH for each property, from its section path and table title."""
    kg_id = inputs["kg_id"]
    root = inputs["root_id"]
    existing = {b["id"] for b in inputs["blocks"]}
    out: list[Instruction] = []
    for prop in inputs["properties"]:
        names = route_path(
            inputs["category"], prop.get("section_path") or [], prop.get("table_title") or "",
            int(inputs.get("max_chain", 2)), prop.get("entity") or "",
        )  # fmt: skip
        current = root
        for name in names:
            child = block_id_for(kg_id, current, name)
            if child not in existing:
                out.append(Instruction(op="CREATE_BLOCK", name=name, parent_id=current))
                existing.add(child)
            current = child
        out.append(Instruction(op="ATTACH", property_id=prop["id"], block_id=current))
    return InstructionList(instructions=out)


_ACRONYM = re.compile(r"\(([A-Za-z][A-Za-z0-9_/]{1,15})\)")


def offline_reroute(inputs: Mapping[str, Any]) -> InstructionList:
    """ATTACH properties to a more specific block of the latest hierarchy (see module doc)."""
    blocks = {b["id"]: b for b in inputs["blocks"]}
    children: dict[str | None, list[str]] = {}
    for b in inputs["blocks"]:
        children.setdefault(b["parent_id"], []).append(b["id"])

    def descendants(bid: str) -> list[str]:
        out, stack = [], list(children.get(bid, []))
        while stack:
            x = stack.pop()
            out.append(x)
            stack.extend(children.get(x, []))
        return out

    depth = {b["id"]: b["path"].count(" > ") for b in inputs["blocks"]}
    root = inputs["root_id"]
    generic = {root, *(block_id_for(inputs["kg_id"], root, name) for name in GENERIC_BLOCKS)}
    keyword_rx = {
        b["id"]: [_keyword_rx(k) for k in b.get("keywords") or []] for b in inputs["blocks"]
    }
    out: list[Instruction] = []
    for prop in inputs["properties"]:
        current = prop["block_id"]
        text = normalise(f"{prop['name']} {prop.get('conditions') or ''}")
        best: tuple[int, int, str] | None = None
        for bid in descendants(current):
            name = blocks[bid]["name"]
            hits = [normalise(name)] + [normalise(a) for a in _ACRONYM.findall(name)]
            if any(len(h) >= 3 and re.search(rf"(?<![a-z0-9]){re.escape(h)}(?![a-z0-9])", text)
                   for h in hits):  # fmt: skip
                score = (depth[bid], len(name), bid)
                best = max(best, score) if best else score
        if best is None and current in generic:
            name_text = normalise(prop["name"])
            for bid, rxs in keyword_rx.items():
                if bid in generic or not rxs:
                    continue
                m = max((len(x.group(0)) for rx in rxs if (x := rx.search(name_text))), default=0)
                if m:
                    score = (m, depth[bid], bid)
                    best = max(best, score) if best else score
        if best is not None and best[2] != current:
            out.append(Instruction(op="ATTACH", property_id=prop["id"], block_id=best[2]))
    return InstructionList(instructions=out)


def _route_offline(inputs: Mapping[str, Any]) -> InstructionList:
    return offline_reroute(inputs) if inputs.get("stage") == "reroute" else offline_route(inputs)


# ---------------------------------------------------------------------------------------------
# Offline refinement


def merge_key(p: Mapping[str, Any]) -> tuple[str, ...]:
    """Same name + same value + same unit + same conditions (normalised)."""
    return tuple(
        normalise(str(p.get(k) or ""))
        for k in ("name", "value", "value_min", "value_typ", "value_max", "unit", "conditions")
    )


def _qualifiers(p: Mapping[str, Any]) -> list[str]:
    value = " ".join(x for x in (p.get("value") or "", p.get("unit") or "") if x)
    return [
        p.get("symbol") or "",
        (p.get("conditions") or "")[:80],
        p.get("table_title") or "",
        f"= {value}" if value else "",
        f"p{p.get('page')} row {p.get('row')}",
    ]


def _distinguishing(m: Mapping[str, Any], members: list[Mapping[str, Any]]) -> str:
    """The qualifier of ``m`` within its same-named group: the fewest components (symbol,
    conditions, table title, value, page/row), chosen greedily, that tell the group apart."""
    table = [_qualifiers(x) for x in members]
    chosen: list[int] = []
    for _ in range(5):
        combos = {tuple(t[q] for q in chosen) for t in table}
        if len(combos) == len(members):
            break
        best = max(
            (q for q in range(5) if q not in chosen),
            key=lambda q: (len({tuple(t[i] for i in (*chosen, q)) for t in table}), -q),
        )
        chosen.append(best)
    mine = _qualifiers(m)
    return "; ".join(mine[q] for q in sorted(chosen) if mine[q])


def _fit(name: str, qualifier: str, suffix: str = "", limit: int = MAX_NAME) -> str:
    """ "name [qualifier]suffix" cut to ``limit`` characters (the qualifier is cut first)."""
    room = limit - len(name) - len(suffix) - 3
    if room >= 8:
        qual = qualifier if len(qualifier) <= room else qualifier[: room - 1].rstrip() + "…"
        return f"{name} [{qual}]{suffix}"
    head = name[: max(limit - len(suffix) - 12, 8)].rstrip()
    return f"{head} [{qualifier[:8]}]{suffix}"


def offline_refine(inputs: Mapping[str, Any]) -> InstructionList:
    """MERGE exact duplicates, RENAME same-named different properties, KEEP the rest."""
    props = list(inputs["properties"])
    out: list[Instruction] = []
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for p in props:
        groups.setdefault(merge_key(p), []).append(p)
    kept: list[Mapping[str, Any]] = []
    for members in groups.values():
        if len(members) > 1:
            ids = [m["id"] for m in members]
            out.append(Instruction(op="MERGE", ids=ids, into=ids[0]))
        kept.append(members[0])
    taken = Counter(normalise(n) for n in inputs.get("other_names") or [])
    for p in kept:
        taken[normalise(p["name"])] += 1
    by_name: dict[str, list[Mapping[str, Any]]] = {}
    for p in kept:
        by_name.setdefault(normalise(p["name"]), []).append(p)
    renamed_ids: set[str] = set()
    for name, members in by_name.items():
        total = taken[name]
        if total < 2:
            continue
        # the earliest keeps the name unless the name is also held outside this batch
        renamed = members if total > len(members) else members[1:]
        quals = {m["id"]: _distinguishing(m, members) for m in members}
        for m in renamed:
            qual = quals[m["id"]] or m["id"][-6:]
            base = _fit(m["name"], qual)
            new, k = base, 2
            while taken[normalise(new)]:
                new, k = _fit(m["name"], qual, f" #{k}"), k + 1
            taken[normalise(new)] += 1
            renamed_ids.add(m["id"])
            out.append(Instruction(op="RENAME", id=m["id"], new_name=new))
    merged = {i for ins in out if ins.op == "MERGE" for i in ins.ids or []}
    for p in props:
        if p["id"] not in renamed_ids and p["id"] not in merged:
            out.append(Instruction(op="KEEP", id=p["id"]))
    return InstructionList(instructions=out)


# ---------------------------------------------------------------------------------------------
# LLM tasks

ROUTE_PROMPT = (
    "You organise the engineering properties of one hardware datasheet into a hierarchy of "
    "functional blocks (e.g. Power > Supply, Host Interface > SPI). For every property listed "
    "return ATTACH(property_id, block_id) to the most general existing block for which it "
    "holds unconditionally, or, when no block fits, CREATE_BLOCK(name, parent_id) under the "
    "best existing block followed by ATTACH to it (block_id = the new block's name). Use only "
    "the ids shown. Return only these instructions. " + DATA_NOT_INSTRUCTIONS
)
REFINE_PROMPT = (
    "You clean up the properties attached to one functional block of a hardware knowledge "
    "graph. For every property listed return exactly one instruction: MERGE(ids, into) when "
    "several properties state the same specification (same meaning, value, unit and "
    "conditions; into = the one to keep), RENAME(id, new_name) when properties share a name "
    "but are different specifications (give a distinguishing name), otherwise KEEP(id). Use "
    "only the ids shown. " + DATA_NOT_INSTRUCTIONS
)


def _prop_line(p: Mapping[str, Any]) -> str:
    value = " ".join(x for x in (p.get("value") or "", p.get("unit") or "") if x)
    parts = [p["id"], p["name"], value]
    for key in ("conditions", "current_block", "section", "table_title"):
        if p.get(key):
            parts.append(f"{key}: {p[key]}")
    return " | ".join(parts)


def _render_route(inputs: Mapping[str, Any]) -> str:
    hierarchy = "\n".join(f"{b['id']} | {b['path']}" for b in inputs["blocks"])
    props = "\n".join(_prop_line(p) for p in inputs["properties"])
    task = "Reroute against the latest hierarchy" if inputs.get("stage") == "reroute" else "Route"
    return (
        f"Document: {inputs['kg_id']} (category: {inputs['category']})\n"
        f"Block hierarchy (id | path):\n{hierarchy}\n\n"
        f"{task} these properties (id | name | value | context):\n" + delimit(props, "document")
    )


def _render_refine(inputs: Mapping[str, Any]) -> str:
    props = "\n".join(_prop_line(p) for p in inputs["properties"])
    return (
        f"Document: {inputs['kg_id']}\nBlock: {inputs['block']['path']}\n"
        f"Properties of this block (id | name | value | context):\n" + delimit(props, "document")
    )


register_task(
    LLMTask(
        name=ROUTE_TASK,
        system_prompt=ROUTE_PROMPT,
        render_user=_render_route,
        offline=_route_offline,
    )
)
register_task(
    LLMTask(
        name=REFINE_TASK,
        system_prompt=REFINE_PROMPT,
        render_user=_render_refine,
        offline=offline_refine,
    )
)


# ---------------------------------------------------------------------------------------------
# The build


@dataclass
class KGResult:
    kg: HardwareKG
    iterations: list[dict[str, int]] = field(default_factory=list)  # per refinement iteration
    stats: dict[str, int] = field(default_factory=dict)

    def nodes(self) -> pl.DataFrame:
        return _frame(kg_nodes(self.kg), HARDWARE_KGS_SCHEMA)

    def log(self) -> pl.DataFrame:
        return _frame(self.kg.log, INSTRUCTIONS_SCHEMA)


def _batches(items: list[str], size: int) -> Iterable[list[str]]:
    size = max(int(size), 1)
    for i in range(0, len(items), size):
        yield items[i : i + size]


class _Asker:
    """Runs a task through the client (LLM) or its offline rule, and names the source."""

    def __init__(self, client: LLMClient | None) -> None:
        self.client = client if client is not None and client.provider != "offline" else None
        self.failures = 0

    def __call__(
        self, task: str, inputs: Mapping[str, Any], offline: Callable[[Mapping[str, Any]], Any]
    ) -> tuple[list[Instruction], str]:
        if self.client is None:
            return list(offline(inputs).instructions), "offline"
        before = self.client.stats.fallbacks
        try:
            result = self.client.complete_structured(task, inputs, InstructionList)
        except LLMError:
            self.failures += 1
            return list(offline(inputs).instructions), "offline-fallback"
        if self.client.stats.fallbacks > before:
            return list(result.instructions), "offline-fallback"
        return list(result.instructions), f"llm:{task}"


def _skeleton(kg: HardwareKG) -> None:
    def add(blocks: tuple[SkeletonBlock, ...], parent: str) -> None:
        for b in blocks:
            bid = block_id_for(kg.kg_id, parent, b.name)
            kg.execute(
                [Instruction(op="CREATE_BLOCK", name=b.name, parent_id=parent)],
                stage="skeleton", iteration=0, batch=parent, source="skeleton",
                allowed_ops=ROUTE_OPS,
            )  # fmt: skip
            kg.blocks[bid].origin = "skeleton"
            kg.blocks[bid].keywords = b.keywords
            kg.blocks[bid].synonyms = b.synonyms
            add(b.children, bid)

    add(skeleton(kg.category), kg.root_id)


def _route_inputs(kg: HardwareKG, pids: list[str], stage: str, config: KGConfig) -> dict[str, Any]:
    props = []
    for pid in pids:
        rec = kg.records[pid]
        st = kg.state[pid]
        entry = {
            "id": pid,
            "name": st.name,
            "value": rec.get("value") or "",
            "unit": rec.get("unit") or "",
            "conditions": rec.get("conditions") or "",
            "section_path": list(rec.get("section_path") or []),
            "section": " > ".join(rec.get("section_path") or []),
            "table_title": rec.get("table_title") or "",
            "entity": rec.get("entity") or "",
        }
        if stage == "reroute":
            entry["block_id"] = st.block_id
            entry["current_block"] = " > ".join(kg.path(st.block_id)) if st.block_id else ""
        props.append(entry)
    return {
        "kg_id": kg.kg_id,
        "category": kg.category,
        "root_id": kg.root_id,
        "stage": stage,
        "max_chain": config.max_chain,
        "blocks": kg.hierarchy(),
        "properties": props,
    }


def _route(
    kg: HardwareKG, pids: list[str], stage: str, iteration: int, ask: _Asker, config: KGConfig
) -> Counter[str]:
    counts: Counter[str] = Counter()
    for n, batch in enumerate(_batches(pids, config.route_batch)):
        inputs = _route_inputs(kg, batch, stage, config)
        instructions, source = ask(ROUTE_TASK, inputs, _route_offline)
        counts += kg.execute(
            instructions, stage=stage, iteration=iteration, batch=f"{stage}-{iteration}-{n}",
            source=source, allowed_ops=ROUTE_OPS, property_ids=batch,
        )  # fmt: skip
    return counts


def _refine_inputs(
    kg: HardwareKG, block: str, batch: list[str], others: list[str]
) -> dict[str, Any]:
    props = []
    for pid in batch:
        rec = kg.records[pid]
        props.append(
            {
                "id": pid,
                "name": kg.state[pid].name,
                **{
                    k: rec.get(k)
                    for k in (
                        "symbol",
                        "value",
                        "value_min",
                        "value_typ",
                        "value_max",
                        "unit",
                        "conditions",
                        "table_title",
                        "page",
                        "row",
                    )
                },
            }
        )
    return {
        "kg_id": kg.kg_id,
        "block": {"id": block, "name": kg.blocks[block].name, "path": " > ".join(kg.path(block))},
        "properties": props,
        "other_names": [kg.state[p].name for p in others],
    }


def _refine(
    kg: HardwareKG, stage: str, iteration: int, ask: _Asker, config: KGConfig
) -> Counter[str]:
    counts: Counter[str] = Counter()
    for block in list(kg.blocks):
        pids = kg.properties_in(block)
        if len(pids) < 2:
            continue
        pids.sort(key=lambda p: (normalise(kg.state[p].name), kg.order[p]))
        for n, batch in enumerate(_batches(pids, config.refine_batch)):
            live = [p for p in batch if kg.state[p].status == "active"]
            others = [p for p in kg.properties_in(block) if p not in live]
            if not live or (
                len(live) == 1
                and normalise(kg.state[live[0]].name)
                not in {normalise(kg.state[o].name) for o in others}
            ):
                continue
            inputs = _refine_inputs(kg, block, live, others)
            instructions, source = ask(REFINE_TASK, inputs, offline_refine)
            counts += kg.execute(
                instructions, stage=stage, iteration=iteration, batch=f"{block}-{n}",
                source=source, allowed_ops=REFINE_OPS, property_ids=live,
            )  # fmt: skip
    return counts


def _route_leftovers(kg: HardwareKG, iteration: int, config: KGConfig) -> Counter[str]:
    """Properties a model left without a block: routed by the offline rule."""
    left = [p for p in kg.active() if kg.state[p].block_id is None]
    counts: Counter[str] = Counter()
    for n, batch in enumerate(_batches(left, config.route_batch)):
        instructions = offline_route(_route_inputs(kg, batch, "route", config)).instructions
        counts += kg.execute(
            instructions, stage="route", iteration=iteration, batch=f"fallback-{n}",
            source="offline-fallback", allowed_ops=ROUTE_OPS, property_ids=batch,
        )  # fmt: skip
    return counts


def _final(kg: HardwareKG, config: KGConfig) -> Counter[str]:
    """Offline refinement of the blocks that still hold a name conflict or duplicate."""
    counts: Counter[str] = Counter()
    for _ in range(3):
        blocks = {b for b, _name, _ids in kg.name_conflicts()}
        if not blocks:
            break
        for block in sorted(blocks):
            pids = sorted(kg.properties_in(block), key=lambda p: kg.order[p])
            inputs = _refine_inputs(kg, block, pids, [])
            counts += kg.execute(
                offline_refine(inputs).instructions, stage="final", iteration=0,
                batch=f"final-{block}", source="offline", allowed_ops=REFINE_OPS,
                property_ids=pids,
            )  # fmt: skip
    return counts


def build_hardware_kg(
    kg_id: str,
    properties: list[Mapping[str, Any]],
    category: str,
    *,
    title: str = "",
    client: LLMClient | None = None,
    config: KGConfig | None = None,
    on_stage: Callable[[str, HardwareKG], None] | None = None,
) -> KGResult:
    """Build one document's graph. ``on_stage(name, kg)`` is called after "route" and after
    each "iteration-<i>" (tests use it to snapshot the graph between stages)."""
    config = config or KGConfig()
    ordered = sorted(
        properties,
        key=lambda p: (
            p.get("page") or 0,
            (p.get("bbox") or [0.0, 0.0])[1],
            p.get("chunk_id") or "",
            p.get("row") or 0,
        ),
    )
    kg = HardwareKG(kg_id, category, ordered, title)
    ask = _Asker(client)
    _skeleton(kg)
    result = KGResult(kg)
    counts = _route(kg, kg.active(), "route", 0, ask, config)
    counts += _route_leftovers(kg, 0, config)
    result.stats["route_attach"] = counts["ATTACH"]
    result.stats["route_create_block"] = counts["CREATE_BLOCK"]
    if on_stage:
        on_stage("route", kg)
    for it in range(1, max(int(config.iterations), 0) + 1):
        before = len(kg.active())
        refine = _refine(kg, "refine", it, ask, config)
        merged = before - len(kg.active())
        reroute = _route(kg, kg.active(), "reroute", it, ask, config)
        reroute += _route_leftovers(kg, it, config)
        result.iterations.append(
            {
                "iteration": it,
                "merge": refine["MERGE"],
                "merged_properties": merged,
                "rename": refine["RENAME"],
                "reroute": reroute["ATTACH"],
                "create_block": reroute["CREATE_BLOCK"],
                "rejected": refine["rejected"] + reroute["rejected"],
                "properties": len(kg.active()),
                "blocks": len(kg.blocks),
            }
        )
        if on_stage:
            on_stage(f"iteration-{it}", kg)
    final = _final(kg, config)
    result.stats.update(
        final_merge=final["MERGE"],
        final_rename=final["RENAME"],
        properties_extracted=len(kg.records),
        properties_active=len(kg.active()),
        blocks=len(kg.blocks),
        instructions=len(kg.log),
        rejected=sum(1 for r in kg.log if r["status"] == "rejected"),
        llm_failures=ask.failures,
    )
    return result


# ---------------------------------------------------------------------------------------------
# Checks on the published tables


def kg_problems(nodes: pl.DataFrame, chunks: pl.DataFrame | None = None) -> dict[str, list[str]]:
    """The four blocking checks, each with its problems (empty lists = pass)."""
    out: dict[str, list[str]] = {
        "every_property_has_source": [],
        "no_property_outside_block": [],
        "block_tree_is_a_tree": [],
        "unique_property_names_per_block": [],
    }
    chunk_ids = set(chunks["chunk_id"].to_list()) if chunks is not None else None
    props = nodes.filter(pl.col("node_type") == "property")
    blocks = nodes.filter(pl.col("node_type") == "block")
    for row in props.select("node_id", "chunk_id", "page").iter_rows(named=True):
        if not row["chunk_id"] or row["page"] is None:
            out["every_property_has_source"].append(f"{row['node_id']}: no source chunk or page")
        elif chunk_ids is not None and row["chunk_id"] not in chunk_ids:
            out["every_property_has_source"].append(
                f"{row['node_id']}: source chunk {row['chunk_id']} does not exist"
            )
    block_ids = set(blocks["node_id"].to_list())
    for row in (
        props.filter(pl.col("status") == "active")
        .select("node_id", "parent_id")
        .iter_rows(named=True)
    ):
        if row["parent_id"] not in block_ids:
            out["no_property_outside_block"].append(f"{row['node_id']}: not attached to a block")
    for kg_id, group in blocks.group_by("kg_id"):
        parent = dict(zip(group["node_id"].to_list(), group["parent_id"].to_list(), strict=True))
        roots = [b for b, p in parent.items() if p is None]
        if len(roots) != 1:
            out["block_tree_is_a_tree"].append(f"{kg_id[0]}: {len(roots)} roots")
        for b in parent:
            seen = {b}
            cur = parent[b]
            while cur is not None:
                if cur not in parent:
                    out["block_tree_is_a_tree"].append(f"{b}: unknown parent {cur}")
                    break
                if cur in seen:
                    out["block_tree_is_a_tree"].append(f"{b}: cycle")
                    break
                seen.add(cur)
                cur = parent[cur]
    active = props.filter(pl.col("status") == "active").with_columns(
        pl.col("name").str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars().alias("_n")
    )
    dups = active.group_by("parent_id", "_n").len().filter(pl.col("len") > 1)
    for row in dups.iter_rows(named=True):
        out["unique_property_names_per_block"].append(
            f"block {row['parent_id']}: {row['len']} properties named {row['_n']!r}"
        )
    return out


def iteration_table(results: Mapping[str, KGResult]) -> list[dict[str, Any]]:
    return [{"kg_id": k, **it} for k, r in results.items() for it in r.iterations]


__all__ = [
    "GENERAL",
    "HARDWARE_KGS_SCHEMA",
    "INSTRUCTIONS_SCHEMA",
    "REFINE_TASK",
    "ROUTE_TASK",
    "KGConfig",
    "KGResult",
    "build_hardware_kg",
    "kg_nodes",
    "kg_problems",
    "merge_key",
    "offline_refine",
    "offline_reroute",
    "offline_route",
    "route_path",
]
