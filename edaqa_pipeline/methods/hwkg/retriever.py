"""``hwkg``: block-first retrieval over the hardware knowledge graphs (paper section I-E).

1. **blocks** -- every block is scored against the query by its *summary*: the block's path
   plus the names, symbols and units of the properties attached to it. BM25 over the
   summaries (the shared ``LexicalIndex``), cosine similarity with the base encoder (block
   vectors made once by the shared ``Embedder``), or their average after max-normalisation
   (``hybrid``, the default when an encoder is at hand);
2. **properties** -- the candidates are the active properties attached to the top
   ``top_blocks`` blocks plus the ones *inherited* from their ancestors (a property stated at
   a more general scope applies to the block too: the ``VGS <= 1.65 V`` limit of the NMOS
   section); each is scored ``0.5 * block score + 0.5 * BM25(property text)``, inherited
   ones discounted by 0.8 per level;
3. **evidence** -- properties are grouped by their source datasheet chunk: one
   ``EvidenceItem`` per chunk (``datasheet_chunk_id``, ``property_ids``, ``chunk_id = ""``:
   it is not a row of ``chunks``), the best property's score, its text the property lines
   and the chunk excerpt (``evidence.py``), page set, so the answer cites ``file.pdf:pN``.

``chunk_fusion`` (on by default) fuses that graph ranking of chunks with BM25 over the
datasheet chunks themselves by reciprocal rank: prose that states no property ("a 9-stage,
dual-issue pipeline") has no node to be found by, and the paper's retrieval assumes the
graph is complete. The benchmark reports the graph-only ranking beside it
(``benchmarks/datasheets_kg.py``), which is where the property graph's own share shows.

Reads ``STORAGE/tables/hardware_kgs.parquet`` and the ``datasheet_chunks`` partitions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from edaqa_pipeline.methods.hwkg.evidence import evidence_text, expand_identifiers
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.embedder import Embedder
from edaqa_pipeline.retrieval.fusion import rrf
from edaqa_pipeline.retrieval.lexical import LexicalIndex
from edaqa_pipeline.retrieval.record import Retrieval, retrieval
from edaqa_pipeline.retrieval.topk import top_k
from edaqa_pipeline.storage.tables import read_partitions, read_table

KG_TABLE = "hardware_kgs"
CHUNK_TABLE = "datasheet_chunks"
SCORERS = ("lexical", "dense", "hybrid")
INHERIT_DISCOUNT = 0.8
FUSION_DEPTH = 50


class HwkgNotBuiltError(RuntimeError):
    """The storage root has no hardware_kgs table (materialise the hardware_kg assets)."""


def _normed(x: np.ndarray) -> np.ndarray:
    top = float(x.max()) if x.size else 0.0
    return x / top if top > 0 else x


def block_summary(path: list[str], props: list[dict[str, Any]], limit: int = 200) -> str:
    """What a block is scored by: its path, then its properties' names, symbols and units."""
    names = [" ".join(str(p.get(k) or "") for k in ("name", "symbol", "unit")) for p in props[:limit]]
    return expand_identifiers(" ".join([*path, *names]))


def property_text(p: dict[str, Any]) -> str:
    return expand_identifiers(" ".join(str(p.get(k) or "") for k in
                                       ("name", "symbol", "description", "value", "unit", "conditions")))


@dataclass
class HwkgRetriever:
    """Block-first retrieval over hardware KG nodes (see module docstring)."""

    nodes: pl.DataFrame
    chunks: pl.DataFrame
    encoder: Any = None  # retrieval.encoders.Encoder; None = lexical block scoring only
    scorer: str = "lexical"
    top_blocks: int = 5
    chunk_fusion: bool = True
    name: str = "hwkg"
    block_vectors: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.scorer not in SCORERS:
            raise ValueError(f"scorer must be one of {', '.join(SCORERS)}, got {self.scorer!r}")
        if self.encoder is None:
            self.scorer = "lexical"
        self.blocks = self.nodes.filter(pl.col("node_type") == "block").to_dicts()
        self.props = self.nodes.filter(
            (pl.col("node_type") == "property") & (pl.col("status") == "active")).to_dicts()
        self.parent = {b["node_id"]: b["parent_id"] for b in self.blocks}
        self.by_block: dict[str, list[int]] = {}
        for i, p in enumerate(self.props):
            self.by_block.setdefault(p["parent_id"], []).append(i)
        summaries = [block_summary(list(b["path"] or []),
                                   [self.props[i] for i in self.by_block.get(b["node_id"], [])])
                     for b in self.blocks]
        self.block_lexical = LexicalIndex(summaries)
        self.prop_lexical = LexicalIndex([property_text(p) for p in self.props])
        self.chunk_rows = self.chunks.to_dicts() if self.chunks.height else []
        self.chunk_row = {c["chunk_id"]: i for i, c in enumerate(self.chunk_rows)}
        self.chunk_lexical = LexicalIndex([
            expand_identifiers(" ".join([*(c.get("section_path") or []), c.get("text") or ""]))
            for c in self.chunk_rows])
        if self.scorer != "lexical" and self.blocks:
            self.block_vectors = Embedder(self.encoder).embed(
                "hwkg_block", [b["node_id"] for b in self.blocks], summaries)
        else:
            self.block_vectors = np.zeros((len(self.blocks), 0), dtype=np.float32)

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_storage(cls, storage: Path | str, documents: list[str] | None = None, *,
                     encoder: Any = None, scorer: str | None = None, top_blocks: int = 5,
                     chunk_fusion: bool = True) -> HwkgRetriever:
        tables = Path(storage) / "tables"
        nodes = read_table(tables, KG_TABLE)
        if nodes is None:
            raise HwkgNotBuiltError(f"{storage} has no {KG_TABLE} table: materialise "
                                    "datasheet_chunks, datasheet_properties and hardware_kgs first")
        kg_docs = sorted(set(nodes["kg_id"].to_list()))
        if documents:
            keep = [d for d in kg_docs if d in set(documents)]
            if keep:
                nodes = nodes.filter(pl.col("kg_id").is_in(keep))
                kg_docs = keep
        chunks = read_partitions(tables, CHUNK_TABLE, kg_docs)
        if chunks is None:
            chunks = pl.DataFrame(schema={"chunk_id": pl.String(), "document": pl.String(),
                                          "text": pl.String(), "page": pl.Int64()})
        return cls(nodes=nodes, chunks=chunks, encoder=encoder,
                   scorer=scorer or ("hybrid" if encoder is not None else "lexical"),
                   top_blocks=top_blocks, chunk_fusion=chunk_fusion)

    # -- scoring ------------------------------------------------------------------------------

    def block_scores(self, query: str) -> np.ndarray:
        lexical = _normed(self.block_lexical.scores(query).astype(np.float64))
        if self.scorer == "lexical" or not self.blocks:
            return lexical
        q = np.asarray(self.encoder.encode([query])[0], dtype=np.float32)
        dense = np.clip(self.block_vectors @ q, 0.0, None).astype(np.float64)
        if self.scorer == "dense":
            return dense
        return 0.5 * lexical + 0.5 * _normed(dense)

    def ranked_properties(self, query: str, bscores: np.ndarray) -> list[tuple[int, float, int]]:
        """(property row, score, inheritance levels), best first."""
        if not self.props:
            return []
        order = top_k(bscores, len(self.blocks))
        chosen = [i for i in order[: self.top_blocks] if bscores[i] > 0] or order[:1]
        candidates: dict[int, tuple[float, int]] = {}
        for bi in chosen:
            chain, cur = [], self.blocks[bi]["node_id"]
            while cur is not None:
                chain.append(cur)
                cur = self.parent.get(cur)
            for level, block in enumerate(chain):
                weight = float(bscores[bi]) * (INHERIT_DISCOUNT ** level)
                for pi in self.by_block.get(block, []):
                    if pi not in candidates or candidates[pi][0] < weight:
                        candidates[pi] = (weight, level)
        rows = sorted(candidates)
        pscores = _normed(self.prop_lexical.scores(query)[rows].astype(np.float64)) if rows else []
        scored = [(pi, 0.5 * candidates[pi][0] + 0.5 * float(ps), candidates[pi][1])
                  for pi, ps in zip(rows, pscores, strict=True)]
        scored.sort(key=lambda t: (-t[1], t[0]))
        return scored

    def retrieve(self, query: str, k: int) -> Retrieval:
        started = time.perf_counter()
        bscores = self.block_scores(query)
        t_blocks = time.perf_counter()
        ranked = self.ranked_properties(query, bscores)
        by_chunk: dict[str, list[tuple[int, float]]] = {}
        for pi, score, _level in ranked:
            by_chunk.setdefault(self.props[pi]["chunk_id"], []).append((pi, score))
        graph_order = list(by_chunk)  # chunks in the order of their best property
        lexical_order: list[str] = []
        if self.chunk_fusion:
            lexical_order = [self.chunk_rows[r]["chunk_id"]
                             for r, _ in self.chunk_lexical.top(query, FUSION_DEPTH)]
            fused = rrf([graph_order[:FUSION_DEPTH], lexical_order])
            order = sorted(fused, key=lambda c: (-fused[c], c))
            score_of = fused
        else:
            order = graph_order
            score_of = {c: by_chunk[c][0][1] for c in graph_order}
        items = [self._item(cid, by_chunk.get(cid, []), float(score_of[cid])) for cid in order[:k]]
        items = [it for it in items if it is not None]
        top = [self.blocks[i] for i in top_k(bscores, self.top_blocks) if bscores[i] > 0]
        trace = {
            "blocks": [{"block": " > ".join(b["path"] or []), "score": round(float(bscores[i]), 4)}
                       for b, i in zip(top, top_k(bscores, self.top_blocks), strict=False)],
            "candidate_properties": len(ranked),
            "graph_chunks": len(graph_order),
            "lexical_chunks": len(lexical_order),
            "scorer": self.scorer,
        }
        done = time.perf_counter()
        return retrieval(self.name, query, items, trace=trace,
                         timings_ms={"blocks": (t_blocks - started) * 1000,
                                     "total": (done - started) * 1000})

    def _item(self, chunk_id: str, props: list[tuple[int, float]], score: float) -> EvidenceItem | None:
        row = self.chunk_row.get(chunk_id)
        chunk = self.chunk_rows[row] if row is not None else None
        records = [self.props[pi] for pi, _ in props]
        if chunk is None and not records:
            return None
        doc = chunk["document"] if chunk is not None else records[0]["document"]
        page = chunk["page"] if chunk is not None else records[0]["page"]
        return EvidenceItem(
            chunk_id="", doc=doc, text=evidence_text(records, chunk), score=score, path="hwkg",
            page=int(page) if page is not None else None, datasheet_chunk_id=chunk_id,
            property_ids=tuple(p["node_id"] for p in records),
            section=tuple(chunk.get("section_path") or ()) if chunk is not None else ())


def make_hwkg(snapshot: Any, llm: Any = None) -> HwkgRetriever:
    """Registry factory: the graphs of the snapshot's storage root, restricted to its indexed
    documents when they overlap, hybrid block scoring with the snapshot's base encoder. The
    retriever uses no model at query time (``llm`` is accepted and ignored)."""
    return HwkgRetriever.from_storage(snapshot.storage, list(getattr(snapshot, "documents", []) or []),
                                      encoder=getattr(snapshot, "base", None))


__all__ = ["HwkgNotBuiltError", "HwkgRetriever", "block_summary", "make_hwkg", "property_text"]
