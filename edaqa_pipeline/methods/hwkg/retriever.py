"""``hwkg``: block-first retrieval over the hardware knowledge graphs (paper section I-E).

1. **blocks** -- every block is scored against the query by its *summary*: the block's path
   plus the names, symbols and units of the properties attached to it. Scoring is BM25 over
   those summaries (``scorer="lexical"``), cosine similarity with the base sentence encoder
   (``"dense"``), or their average after max-normalisation (``"hybrid"``, the default when
   an encoder is at hand);
2. **properties** -- the candidates are the active properties attached to the top
   ``top_blocks`` blocks plus the ones *inherited* from their ancestors (properties stated
   at a more general scope apply to the block too); each is scored
   ``0.5 * block score + 0.5 * BM25(property text)`` with inherited ones discounted by 0.8
   per level;
3. **evidence** -- per property one ``EvidenceItem``: the property line (name, value, unit,
   conditions, block path) followed by its source chunk (long table chunks are cut to their
   title, header and the rows that carry the property's values), with document and page, so
   the answer cites ``file.pdf:pN``. ``path`` is ``"hwkg"``.

Loaded from a storage root: ``STORAGE/tables/hardware_kgs.parquet`` and the
``datasheet_chunks`` partitions (``STORAGE/tables/datasheet_chunks/<doc>.parquet``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from edaqa_pipeline.extraction.datasheets.textutil import number_variants, tokens
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.storage.tables import read_partitions, read_table

KG_TABLE = "hardware_kgs"
CHUNK_TABLE = "datasheet_chunks"
MAX_EVIDENCE_CHARS = 1500
_STOP = frozenset(
    "the a an of and or in on at for to by with from is are be what which how does do its it "
    "this that as per".split()
)


class HwkgNotBuiltError(RuntimeError):
    """The storage root has no hardware_kgs table (materialise the hardware_kg assets)."""


def _terms(text: str) -> list[str]:
    out = []
    for t in tokens(text):
        if t in _STOP:
            continue
        out.append(t)
        if "_" in t:
            out.extend(p for p in t.split("_") if p)
    return out


class BM25:
    """Okapi BM25 over a fixed list of documents (k1=1.2, b=0.75)."""

    def __init__(self, docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tf = [Counter(d) for d in docs]
        self.len = np.asarray([len(d) for d in docs], dtype=np.float64)
        self.avg = float(self.len.mean()) if len(docs) else 0.0
        df: Counter[str] = Counter()
        for d in self.tf:
            df.update(d.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}

    def scores(self, query: list[str], rows: Iterable[int] | None = None) -> np.ndarray:
        idx = list(range(len(self.tf))) if rows is None else list(rows)
        out = np.zeros(len(idx), dtype=np.float64)
        if not idx or self.avg == 0:
            return out
        for j, i in enumerate(idx):
            tf = self.tf[i]
            norm = self.k1 * (1 - self.b + self.b * self.len[i] / self.avg)
            s = 0.0
            for t in query:
                f = tf.get(t)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1) / (f + norm)
            out[j] = s
        return out


def _normed(x: np.ndarray) -> np.ndarray:
    top = float(x.max()) if x.size else 0.0
    return x / top if top > 0 else x


def _property_line(p: dict[str, Any], path: list[str]) -> str:
    value = " ".join(x for x in (p.get("value") or "", p.get("unit") or "") if x)
    line = f"{p['name']}"
    if p.get("symbol"):
        line += f" ({p['symbol']})"
    line += f" = {value}" if value else ""
    if p.get("conditions"):
        line += f"; conditions: {p['conditions']}"
    return f"[{' > '.join(path)}] {line}"


def _excerpt(chunk_text: str, prop: dict[str, Any], limit: int = MAX_EVIDENCE_CHARS) -> str:
    """The chunk, or for a long table its title, header and the rows holding the values."""
    if len(chunk_text) <= limit:
        return chunk_text
    lines = chunk_text.split("\n")
    head = lines[:2]
    wanted: set[str] = set()
    for key in ("value", "value_min", "value_typ", "value_max"):
        for tok in tokens(str(prop.get(key) or "")):
            wanted.update(number_variants(tok) if tok[:1].isdigit() else {tok})
    name_toks = set(tokens(prop.get("original_name") or prop.get("name") or ""))
    scored = []
    for i, line in enumerate(lines[2:], start=2):
        lt = set(tokens(line))
        hit = len(lt & wanted) * 2 + len(lt & name_toks)
        if hit:
            scored.append((hit, i))
    keep = sorted(i for _, i in sorted(scored, reverse=True)[:6])
    body = [lines[i] for i in keep]
    text = "\n".join([*head, *(["..."] if keep else []), *body])
    return text[:limit]


@dataclass
class HwkgRetriever:
    """Block-first retrieval over hardware KG nodes (see module docstring)."""

    nodes: pl.DataFrame
    chunks: pl.DataFrame
    encoder: Any = None  # edaqa_pipeline.retrieval.encoders.Encoder, or None for lexical only
    scorer: str = "lexical"  # lexical | dense | hybrid
    top_blocks: int = 5
    name: str = "hwkg"
    _cache: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.scorer != "lexical" and self.encoder is None:
            self.scorer = "lexical"
        blocks = self.nodes.filter(pl.col("node_type") == "block")
        props = self.nodes.filter(
            (pl.col("node_type") == "property") & (pl.col("status") == "active")
        )
        self.blocks = blocks.to_dicts()
        self.props = props.to_dicts()
        self.block_row = {b["node_id"]: i for i, b in enumerate(self.blocks)}
        self.parent = {b["node_id"]: b["parent_id"] for b in self.blocks}
        self.by_block: dict[str, list[int]] = {}
        for i, p in enumerate(self.props):
            self.by_block.setdefault(p["parent_id"], []).append(i)
        summaries = []
        for b in self.blocks:
            names = [
                f"{self.props[i]['name']} {self.props[i].get('symbol') or ''} "
                f"{self.props[i].get('unit') or ''}"
                for i in self.by_block.get(b["node_id"], [])[:200]
            ]
            summaries.append(" ".join([*b["path"], *names]))
        self.block_summaries = summaries
        self.block_bm25 = BM25([_terms(s) for s in summaries])
        self.prop_bm25 = BM25(
            [
                _terms(
                    " ".join(
                        str(p.get(k) or "")
                        for k in ("name", "symbol", "description", "value", "unit", "conditions")
                    )
                )
                for p in self.props
            ]
        )
        self.chunk_text = (
            dict(zip(self.chunks["chunk_id"].to_list(), self.chunks["text"].to_list(), strict=True))
            if self.chunks.height
            else {}
        )

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_storage(
        cls,
        storage: Path | str,
        documents: list[str] | None = None,
        *,
        encoder: Any = None,
        scorer: str | None = None,
        top_blocks: int = 5,
    ) -> HwkgRetriever:
        tables = Path(storage) / "tables"
        nodes = read_table(tables, KG_TABLE)
        if nodes is None:
            raise HwkgNotBuiltError(
                f"{storage} has no {KG_TABLE} table: materialise datasheet_chunks, "
                "datasheet_properties and hardware_kgs first"
            )
        kg_docs = sorted(set(nodes["kg_id"].to_list()))
        if documents:
            keep = [d for d in kg_docs if d in set(documents)]
            if keep:
                nodes = nodes.filter(pl.col("kg_id").is_in(keep))
                kg_docs = keep
        chunks = read_partitions(tables, CHUNK_TABLE, kg_docs)
        if chunks is None:
            chunks = pl.DataFrame(schema={"chunk_id": pl.String(), "text": pl.String()})
        if scorer is None:
            scorer = "hybrid" if encoder is not None else "lexical"
        return cls(nodes=nodes, chunks=chunks, encoder=encoder, scorer=scorer,
                   top_blocks=top_blocks)  # fmt: skip

    # -- scoring ------------------------------------------------------------------------------

    def _block_vectors(self) -> np.ndarray:
        if "block_vectors" not in self._cache:
            self._cache["block_vectors"] = self.encoder.encode(self.block_summaries)
        return self._cache["block_vectors"]

    def block_scores(self, query: str) -> np.ndarray:
        lexical = _normed(self.block_bm25.scores(_terms(query)))
        if self.scorer == "lexical" or not self.blocks:
            return lexical
        q = self.encoder.encode([query])[0]
        dense = np.clip(self._block_vectors() @ q, 0.0, None)
        if self.scorer == "dense":
            return dense
        return 0.5 * lexical + 0.5 * _normed(dense)

    def ranked(self, query: str, k: int) -> list[tuple[int, float, int]]:
        """(property row, score, inheritance levels) best first."""
        if not self.props or k <= 0:
            return []
        bscores = self.block_scores(query)
        order = sorted(range(len(self.blocks)), key=lambda i: (-bscores[i], i))
        chosen = [i for i in order[: self.top_blocks] if bscores[i] > 0] or order[:1]
        candidates: dict[int, tuple[float, int]] = {}
        for bi in chosen:
            bid = self.blocks[bi]["node_id"]
            chain = [bid]
            cur = self.parent.get(bid)
            while cur is not None:
                chain.append(cur)
                cur = self.parent.get(cur)
            for level, block in enumerate(chain):
                weight = float(bscores[bi]) * (0.8**level)
                for pi in self.by_block.get(block, []):
                    if pi not in candidates or candidates[pi][0] < weight:
                        candidates[pi] = (weight, level)
        rows = sorted(candidates)
        pscores = _normed(self.prop_bm25.scores(_terms(query), rows))
        scored = [
            (pi, 0.5 * candidates[pi][0] + 0.5 * float(ps), candidates[pi][1])
            for pi, ps in zip(rows, pscores, strict=True)
        ]
        scored.sort(key=lambda t: (-t[1], t[0]))
        return scored[:k]

    def retrieve(self, query: str, k: int) -> list[EvidenceItem]:
        out = []
        for pi, score, _level in self.ranked(query, k):
            p = self.props[pi]
            chunk = self.chunk_text.get(p["chunk_id"], "")
            text = _property_line(p, list(p["path"] or []))
            if chunk:
                text += f"\nSource ({p['document']} p{p['page']}):\n" + _excerpt(chunk, p)
            out.append(
                EvidenceItem(
                    chunk_id=p["chunk_id"],
                    doc=p["document"],
                    text=text,
                    score=float(score),
                    path="hwkg",
                    page=int(p["page"]) if p["page"] is not None else None,
                )
            )
        return out


def make_hwkg_retriever(snapshot: Any) -> HwkgRetriever:
    """Factory for ``retrieval.retrievers.METHODS["hwkg"]``: the graphs of the snapshot's storage
    root, restricted to its indexed documents when they overlap, hybrid block scoring with the
    snapshot's base encoder."""
    return HwkgRetriever.from_storage(
        snapshot.storage, list(getattr(snapshot, "documents", []) or []),
        encoder=getattr(snapshot, "base", None),
    )  # fmt: skip


__all__ = ["BM25", "HwkgNotBuiltError", "HwkgRetriever", "make_hwkg_retriever"]
