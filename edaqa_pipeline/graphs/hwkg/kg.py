"""Building one document's hierarchical hardware KG: skeleton, routing, iterative refinement.

One graph per document (a datasheet describes one device or series), started from the
category's skeleton (``skeletons.py``) under a root block named after the document; then, all
through validated instructions (``instructions.py``, ``executor.py``):

1. **routing** -- properties in batches of ``route_batch``: ``CREATE_BLOCK`` / ``ATTACH``;
2. for ``iterations`` rounds (default 3, the paper's):

   a. **refinement** -- per block, its properties in batches of ``refine_batch``:
      ``MERGE`` duplicates and subsumed properties, ``RENAME`` same-named different
      specifications, ``KEEP``;
   b. **rerouting** -- every property against the latest hierarchy: ``ATTACH`` to a better
      block, ``CREATE_BLOCK`` when needed.

There is no final clean-up pass: a name conflict left after the last iteration stays in the
graph, the ``unique_property_names_per_block`` check fails on it, and ``KGResult.converged``
is False -- a refinement that did not converge is reported, not hidden. (The offline rules
converge in one iteration.) Per iteration the result records MERGE, merged properties,
RENAME, reroutes, CREATE_BLOCK and rejections (the paper's Figure 2).

The offline rules (``routing.py``, ``refinement.py``) are the default; with an LLM the same
tasks (``tasks.py``) go through the LLM layer at the paper's temperature (0.2, ``KGConfig.
temperature``); properties a model leaves unrouted are routed by the offline rule (logged as
``offline-fallback``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from edaqa_pipeline.extraction.datasheets.skeletons import SkeletonBlock, skeleton
from edaqa_pipeline.extraction.datasheets.textutil import normalise
from edaqa_pipeline.graphs.hwkg.executor import HardwareKG
from edaqa_pipeline.graphs.hwkg.instructions import (
    REFINE_OPS,
    REJECTED,
    ROUTE_OPS,
    Instruction,
    InstructionList,
    RefineInstructionList,
    block_id_for,
    to_instructions,
)
from edaqa_pipeline.graphs.hwkg.refinement import offline_refine
from edaqa_pipeline.graphs.hwkg.routing import offline_route, offline_route_task
from edaqa_pipeline.graphs.hwkg.schema import (
    HARDWARE_KGS_SCHEMA,
    INSTRUCTIONS_SCHEMA,
    kg_nodes,
)
from edaqa_pipeline.graphs.hwkg.tasks import REFINE_TASK, ROUTE_TASK
from edaqa_pipeline.llm import LLMClient, LLMError
from edaqa_pipeline.model import frame

PAPER_TEMPERATURE = 0.2


@dataclass
class KGConfig:
    """How one document's graph is built (module docstring). The paper (002) fixes the
    iterations and the temperature; it gives no batch sizes, and the rest is not tuned."""

    iterations: int = 3
    """Refine-then-reroute iterations after the first routing: the paper's three, "a practical
    tradeoff between refinement quality and runtime" (section I-D, Fig. 2)."""
    route_batch: int = 20
    """Properties per routing (and rerouting) query. The paper gives no size; not tuned."""
    refine_batch: int = 30
    """Properties of one block per refinement query. The paper gives no size; not tuned."""
    max_chain: int = 2
    """Offline routing: at most this many section headings become blocks below the matched
    skeleton block (the matched heading and the leaf; with no match, the last ones under
    "General"). Not tuned."""
    temperature: float = PAPER_TEMPERATURE
    """Sampling temperature of every model call: the paper's 0.2 (section IV, GPT-5.4 at
    temperature 0.2)."""


@dataclass
class KGResult:
    kg: HardwareKG
    iterations: list[dict[str, int]] = field(default_factory=list)  # per refinement iteration
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def converged(self) -> bool:
        """No MERGE or RENAME in the last iteration and no name conflict left (the paper's
        convergence criterion, plus the check that it implies)."""
        last = self.iterations[-1] if self.iterations else {"merge": 0, "rename": 0}
        return last["merge"] == 0 and last["rename"] == 0 and not self.kg.name_conflicts()

    def nodes(self) -> pl.DataFrame:
        return frame(kg_nodes(self.kg), HARDWARE_KGS_SCHEMA)

    def log(self) -> pl.DataFrame:
        return frame(self.kg.log, INSTRUCTIONS_SCHEMA)


def _batches(items: list[str], size: int) -> Iterable[list[str]]:
    size = max(int(size), 1)
    for i in range(0, len(items), size):
        yield items[i : i + size]


class _Asker:
    """Runs a task through the client (LLM) or its offline rule, and names the source."""

    def __init__(self, client: LLMClient | None, temperature: float) -> None:
        self.client = client if client is not None and client.provider != "offline" else None
        self.temperature = temperature
        self.failures = 0

    def __call__(self, task: str, inputs: Mapping[str, Any], offline: Callable[[Mapping[str, Any]], Any],
                 response_model: type[Any] = InstructionList) -> tuple[list[Any], str]:
        if self.client is None:
            return list(offline(inputs).instructions), "offline"
        before = self.client.stats.fallbacks
        try:
            result = self.client.complete_structured(task, inputs, response_model,
                                                     temperature=self.temperature)
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
        instructions, source = ask(ROUTE_TASK, inputs, offline_route_task)
        counts += kg.execute(
            instructions, stage=stage, iteration=iteration, batch=f"{stage}-{iteration}-{n}",
            source=source, allowed_ops=ROUTE_OPS, property_ids=batch,
        )  # fmt: skip
    return counts


def _refine_inputs(kg: HardwareKG, block: str, batch: list[str], others: list[str]) -> dict[str, Any]:
    keys = ("symbol", "description", "value", "value_min", "value_typ", "value_max", "unit",
            "conditions", "table_title", "page", "row")
    props = [{"id": pid, "name": kg.state[pid].name, **{k: kg.records[pid].get(k) for k in keys}}
             for pid in batch]
    return {
        "kg_id": kg.kg_id,
        "block": {"id": block, "name": kg.blocks[block].name, "path": " > ".join(kg.path(block))},
        "properties": props,
        "other_names": [kg.state[p].name for p in others],
    }


def _refine(kg: HardwareKG, stage: str, iteration: int, ask: _Asker, config: KGConfig) -> Counter[str]:
    counts: Counter[str] = Counter()
    for block in list(kg.blocks):
        pids = kg.properties_in(block)
        if len(pids) < 2:
            continue
        pids.sort(key=lambda p: (normalise(kg.state[p].name), kg.order[p]))
        for n, batch in enumerate(_batches(pids, config.refine_batch)):
            live = [p for p in batch if kg.state[p].status == "active"]
            others = [p for p in kg.properties_in(block) if p not in live]
            if not live or (len(live) == 1 and normalise(kg.state[live[0]].name)
                            not in {normalise(kg.state[o].name) for o in others}):
                continue
            inputs = _refine_inputs(kg, block, live, others)
            answer, source = ask(REFINE_TASK, inputs, offline_refine, RefineInstructionList)
            names = [p["name"] for p in inputs["properties"]]
            instructions, refused = to_instructions(answer, live, names)
            where = {"stage": stage, "iteration": iteration, "batch": f"{block}-{n}", "source": source}
            for ins, reason in refused:
                kg.record(str(ins.op), ins.model_dump(exclude_none=True, exclude={"op"}), REJECTED,
                          reason, **where)
                counts["rejected"] += 1
            counts += kg.execute(instructions, allowed_ops=REFINE_OPS, property_ids=live, **where)
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
    ordered = sorted(properties, key=lambda p: (p.get("page") or 0, (p.get("bbox") or [0.0, 0.0])[1],
                                                p.get("chunk_id") or "", p.get("row") or 0))
    kg = HardwareKG(kg_id, category, ordered, title)
    ask = _Asker(client, config.temperature)
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
        result.iterations.append({
            "iteration": it, "merge": refine["MERGE"], "merged_properties": merged,
            "rename": refine["RENAME"], "reroute": reroute["ATTACH"],
            "create_block": reroute["CREATE_BLOCK"],
            "rejected": refine["rejected"] + reroute["rejected"],
            "properties": len(kg.active()), "blocks": len(kg.blocks),
            "name_conflicts": len(kg.name_conflicts()),
        })
        if on_stage:
            on_stage(f"iteration-{it}", kg)
    result.stats.update(
        properties_extracted=len(kg.records), properties_active=len(kg.active()),
        blocks=len(kg.blocks), instructions=len(kg.log),
        rejected=sum(1 for r in kg.log if r["status"] == "rejected"),
        llm_failures=ask.failures, name_conflicts_left=len(kg.name_conflicts()),
        converged=int(result.converged),
    )
    return result


__all__ = ["PAPER_TEMPERATURE", "KGConfig", "KGResult", "build_hardware_kg"]
