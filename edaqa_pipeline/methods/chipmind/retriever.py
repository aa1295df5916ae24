"""The ``chipmind`` retriever: ChipKG-augmented multi-hop retrieval (ChipMind section 3.3).

One question runs Algorithm 2 of the paper, with the offline stand-ins named below:

1. **Seed and rank** (``rank``): the (sub-)query embedding (base encoder) is compared with the
   KG's entity and statement node vectors; the ``seed_nodes`` most similar nodes, the entity
   nodes the query names literally (commands, options, variables, files: exact canonical
   match), the ``seed_passages`` passages most similar to the query and the ``seed_passages``
   best BM25 passages (in-memory Okapi BM25, ``lexical_weight``; 0 = vector seeds only) form
   the personalization vector of a Personalized PageRank over the ChipKG; passages are ranked
   by their PPR mass.
2. **Adaptive top-K** (Algorithm 1, ``adaptive_k``): start from the top ``k0`` passages, add
   ``delta_k`` at a time while ``MIG_t = 1 - cos(emb(summary(S_t)), emb(summary(S_t + dS)))``
   exceeds ``tau``; at most ``k_max``. Offline summaries are extractive: the
   ``summary_sentences`` statements of the set most similar to the query, embedded as the
   normalised mean of their (precomputed) node vectors -- a summary changes only when the new
   passages hold sentences more relevant than those already gathered.
3. **CSA-guided filter** (``anchor_filter``): the target anchor (type, entity) of the
   (sub-)query is inferred by rules (:func:`target_anchor`); a candidate passage is kept when
   one of its statements has a compatible anchor (:func:`compatible`).
4. **Knowledge gaps and sub-queries**: offline, a gap is an aspect of the question not yet
   covered by the gathered evidence: an identifier of the question (command, option,
   variable, file) that no gathered passage contains, or a clause of the question (the
   question split at "and then", "next", "also", "?"...) whose content words no gathered
   passage covers to ``cover_threshold``. Each gap becomes a sub-query (the clause / the
   identifier) that is ranked, adaptively cut and filtered like the question; new passages
   are integrated; at most ``max_iterations`` rounds, stopping early when no gap is left or a
   round adds nothing. The question and all its clauses get their vectors from one encoder
   pass over the question (``clause_vectors="contextual"``: a clause vector is the mean of its
   tokens' embeddings in the question, the encoder's own mean pooling restricted to the
   clause), so the loop costs one encoder call per question.

With an LLM client (``client``, provider other than offline) the target anchor, the
summaries and the gap detection go through the LLM tasks ``chipmind_anchor``,
``chipmind_summary`` and ``chipmind_gaps`` (whose offline implementations are these rules).

``retrieve`` returns the gathered context C in the order it was gathered (question first,
then each sub-query's new passages), cut at ``k``. ``last_trace`` describes the last question (iterations,
retrieved-set sizes, sub-queries, K and MIG values per step, all chunk ids retrieved at any
step, timings); ``last_steps`` holds each step's candidate list as EvidenceItems for
``system_recall@k``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from edaqa_pipeline.graphs.chipkg.extract import ANCHOR_TYPES, mentions
from edaqa_pipeline.graphs.chipkg.graph import KGGraph, load_graph
from edaqa_pipeline.model import EvidenceItem

# --- parameters ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChipMindConfig:
    """Parameters; the defaults were chosen on ORD-QA itself (see docs/chipmind.md)."""

    k0: int = 5  # initial retrieval size (Algorithm 1, line 1)
    delta_k: int = 2  # expansion step
    tau: float = 0.01  # MIG threshold: expand while MIG_t > tau
    k_max: int = 10  # cap of one adaptive retrieval (also capped by retrieve()'s k)
    fixed_k: int = 5  # the per-step K when adaptive_k is off (= k0: adaptive K only adds)
    summary_sentences: int = 4  # size of the extractive summary
    seed_nodes: int = 5  # vector-similar KG nodes (entities, statements) seeding PPR
    seed_passages: int = 10  # vector-similar (and BM25-best) passages seeding PPR
    passage_weight: float = 0.5  # vector passage seed weight relative to node seeds
    lexical_weight: float = 1.0  # BM25 passage seed weight (0 = vector seeds only)
    entity_weight: float = 1.0  # weight of entities the query names literally
    damping: float = 0.5  # PPR damping (HippoRAG 2 uses 0.5)
    ppr_tol: float = 1e-6  # L1 convergence tolerance of the power iteration
    max_iterations: int = 3  # rounds of sub-queries after the question
    max_subqueries: int = 3  # sub-queries per round
    cover_threshold: float = 0.9  # a clause is covered when this share of its words is found
    clause_vectors: str = "contextual"  # contextual (one encoder pass) | separate
    adaptive_k: bool = True
    anchor_filter: bool = True
    iterate: bool = True


# --- small pure functions (unit-tested) ------------------------------------------------------


def matvec(matrix: np.ndarray, vector: np.ndarray, block: int = 512) -> np.ndarray:
    """``matrix @ vector`` in row blocks: OpenBLAS multi-threads a large gemv, which costs
    ~20 ms instead of ~0.3 ms on a busy 2-core machine; blocks stay single-threaded."""
    if matrix.shape[0] <= block:
        return matrix @ vector
    return np.concatenate([matrix[i: i + block] @ vector for i in range(0, matrix.shape[0], block)])


def top_indices(scores: np.ndarray, n: int) -> np.ndarray:
    """Indexes of the ``n`` highest scores, best first, ties by index (deterministic)."""
    if n <= 0 or scores.size == 0:
        return np.zeros(0, np.int64)
    n = min(n, scores.size)
    part = np.argpartition(-scores, n - 1)[:n]
    return part[np.lexsort((part, -scores[part]))]


# Lucene's / tantivy's English stop words (what the LanceDB full-text index removes)
BM25_STOP = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)


@lru_cache(maxsize=1)
def _snowball() -> Callable[[str], str]:
    try:  # nltk comes with rouge-score (already a dependency); else the light stemmer
        from nltk.stem.snowball import SnowballStemmer

        return lru_cache(maxsize=200_000)(SnowballStemmer("english").stem)
    except ImportError:  # pragma: no cover
        return stem


def bm25_tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric runs (identifiers split at ``_``), stop words removed,
    Snowball-stemmed: the LanceDB full-text tokenizer's settings."""
    st = _snowball()
    return [st(t) for t in (w.lower() for w in LexicalIndex.TOKEN.findall(text)) if t not in BM25_STOP]


class LexicalIndex:
    """Okapi BM25 (k1 = 1.2, b = 0.75) over passages, in memory, with the tokenisation of
    :func:`bm25_tokens`. Used for the lexical PPR seeds: sub-millisecond per query, where a
    LanceDB full-text search costs 5-20 ms on a busy machine."""

    TOKEN = re.compile(r"[A-Za-z0-9]+")

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        import scipy.sparse as sp

        vocab: dict[str, int] = {}
        rows, cols, vals = [], [], []
        lengths = np.zeros(len(texts), np.float64)
        for d, text in enumerate(texts):
            counts: dict[int, int] = {}
            toks = bm25_tokens(text)
            lengths[d] = len(toks)
            for t in toks:
                j = vocab.setdefault(t, len(vocab))
                counts[j] = counts.get(j, 0) + 1
            for j, c in counts.items():
                rows.append(d)
                cols.append(j)
                vals.append(c)
        tf = sp.csr_matrix((np.asarray(vals, np.float64), (rows, cols)), shape=(len(texts), len(vocab)))
        df = np.bincount(np.asarray(cols, np.int64), minlength=len(vocab))
        n = max(len(texts), 1)
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        avgdl = lengths.mean() if len(texts) else 1.0
        norm = k1 * (1.0 - b + b * lengths / (avgdl or 1.0))
        tf = tf.tocoo()
        weight = tf.data * (k1 + 1.0) / (tf.data + norm[tf.row]) * idf[tf.col]
        self.matrix = sp.csc_matrix((weight, (tf.row, tf.col)), shape=tf.shape)
        self.vocab = vocab

    def scores(self, query: str) -> np.ndarray:
        terms = [self.vocab[t] for t in bm25_tokens(query) if t in self.vocab]
        if not terms:
            return np.zeros(self.matrix.shape[0])
        # a term repeated in the query counts once per occurrence (one clause each, like a
        # boolean OR query in tantivy)
        return np.asarray(self.matrix[:, terms].sum(axis=1)).ravel()


def summary_embedding(unit_vectors: np.ndarray, query: np.ndarray, m: int) -> np.ndarray:
    """Embedding of the extractive summary of a set: the normalised mean of the ``m`` unit
    vectors most similar to ``query`` (ties: first units first)."""
    if unit_vectors.shape[0] == 0:
        return np.zeros_like(query)
    sims = unit_vectors @ query
    order = sorted(range(len(sims)), key=lambda i: (-sims[i], i))[:m]
    mean = unit_vectors[order].mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else mean


def mig(base: np.ndarray, new: np.ndarray) -> float:
    """Marginal information gain proxy: cosine distance between two summary embeddings."""
    nb, nn = float(np.linalg.norm(base)), float(np.linalg.norm(new))
    if nb == 0 or nn == 0:
        return 1.0 if nb != nn else 0.0
    return max(0.0, float(1.0 - float(base @ new) / (nb * nn)))


def adaptive_k(
    ranked: Sequence[int],
    units: Callable[[Sequence[int]], np.ndarray],
    query: np.ndarray,
    *,
    k0: int,
    delta_k: int,
    tau: float,
    k_max: int,
    m: int,
    summarize: Callable[[Sequence[int]], np.ndarray] | None = None,
) -> tuple[list[int], list[float]]:
    """Algorithm 1: (S, MIG values). ``units(items)`` gives the summary units' vectors of a
    set; ``summarize`` (optional) replaces the extractive summary embedding (LLM mode)."""
    limit = min(k_max, len(ranked))
    chosen = list(ranked[: min(k0, limit)])
    migs: list[float] = []

    def emb(items: Sequence[int]) -> np.ndarray:
        if summarize is not None:
            return summarize(items)
        return summary_embedding(units(items), query, m)

    base = emb(chosen)
    while len(chosen) < limit:
        delta = list(ranked[len(chosen): min(len(chosen) + delta_k, limit)])
        new = emb(chosen + delta)
        gain = mig(base, new)
        migs.append(gain)
        if gain > tau:
            chosen += delta
            base = new
        else:
            break
    return chosen, migs


_STOP = frozenset(
    str.split(
        """
    a an the and or of to in on for with by from at as is are be been being was were it its this
    that these those there their them they he she his her i me my we our you your can could
    would should will shall may might must do does did how what which who whom why when where
    want wants need needs like also then after before during while into onto about using use
    used via any some all each other such so if than too very just only more most own same
    both few not no nor over under again further once here s t don now get got let make
    user users engineer engineers designer one someone openroad tool tools design designs
    specific certain particular way ways process step steps able help go going achieve
    """
    )
)
_CLAUSE_SPLIT = re.compile(
    r"(?:[?!]\s+|\.\s+(?=[A-Z])|;\s*|,?\s+(?:and then|then|and also|and how|and what|and finally|"
    r"after that|afterwards|additionally|moreover|furthermore|as well as|while also|"
    r"and later|and next)\s+|\s+(?:Next|Later|Also|Additionally|Finally|Then),?\s+)"
)
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def stem(word: str) -> str:
    w = word.lower()
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ed", "es", "s"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            return w[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return w


def keywords(text: str) -> list[str]:
    """Content words of a text (stop words dropped), stemmed, in order, unique."""
    out = []
    for tok in _TOKEN.findall(text):
        low = tok.lower()
        if len(low) < 3 or low in _STOP:
            continue
        s = stem(low)
        if s not in out:
            out.append(s)
    return out


def word_set(text: str) -> frozenset[str]:
    return frozenset(stem(t.lower()) for t in _TOKEN.findall(text))


_LEADING_CONNECTOR = re.compile(
    r"^(?:also|next|later|additionally|finally|then|and|moreover|furthermore|afterwards),?\s+", re.I
)


def question_clauses(question: str) -> list[str]:
    """The aspects of a question: its sentences / coordinated parts (>= 2 content words)."""
    parts = [_LEADING_CONNECTOR.sub("", p.strip(" ,.?")) for p in _CLAUSE_SPLIT.split(question.strip())
             if p and p.strip(" ,.?")]
    return [p for p in parts if len(keywords(p)) >= 2]


def contextual_vectors(encoder: Any, text: str, spans: Sequence[tuple[int, int]]) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """The text's vector and a vector per character span from ONE encoder pass ("late
    chunking"): the encoder mean-pools token embeddings, so the mean of all of them is exactly
    ``encoder.encode([text])[0]`` and the mean over a span's tokens embeds that span in the
    context of the whole question. A span without tokens (or beyond the model's maximum
    length) gets None."""
    from edaqa_pipeline.retrieval import encoders

    model = encoder.model()
    with getattr(encoders, "_LOCK", None) or _NO_LOCK:
        tokens = model.encode(text, output_value="token_embeddings", show_progress_bar=False)
    emb = np.asarray(tokens.detach().cpu().numpy() if hasattr(tokens, "detach") else tokens, np.float32)
    offsets = model.tokenizer(text, return_offsets_mapping=True, truncation=True,
                              max_length=model.max_seq_length)["offset_mapping"][: emb.shape[0]]

    def pooled(rows: np.ndarray) -> np.ndarray:
        v = rows.mean(axis=0)
        return v / (np.linalg.norm(v) or 1.0)

    out: list[np.ndarray | None] = []
    for start, end in spans:
        idx = [i for i, (a, b) in enumerate(offsets) if b > a and a >= start and b <= end]
        out.append(pooled(emb[idx]) if idx else None)
    return pooled(emb), out


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_LOCK = _NoLock()


# --- Circuit Semantic Anchors of queries -----------------------------------------------------

_TYPE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("diagnostic", re.compile(r"\b(error|warning|message|fails?|failed|crash|[A-Z]{2,5}-\d{3,5})\b", re.I)),
    ("definition", re.compile(r"\b(what (?:is|are|does)|meaning|difference|purpose|explain)\b", re.I)),
    ("configuration", re.compile(r"\b(option|flag|switch|parameter|argument|default|variable|"
                                 r"setting|configure|value of|set the)\b", re.I)),
    ("procedure", re.compile(r"\b(how (?:to|can|do|should|would)|steps?|what command|which command|"
                             r"commands?|procedure|run|perform|use)\b", re.I)),
    ("behavior", re.compile(r"\b(what happens|when|if|why|cause|behaviou?r)\b", re.I)),
)
# target anchor type -> statement anchor types that can answer it
TYPE_COMPAT: dict[str, frozenset[str]] = {
    "configuration": frozenset({"configuration", "definition", "procedure"}),
    "procedure": frozenset({"procedure", "configuration", "behavior", "definition"}),
    "behavior": frozenset({"behavior", "configuration", "definition", "procedure", "diagnostic"}),
    "definition": frozenset({"definition", "configuration", "behavior"}),
    "diagnostic": frozenset({"diagnostic", "behavior", "procedure", "configuration"}),
    "any": frozenset(ANCHOR_TYPES),
}


def target_anchor(query: str, known_entity: Callable[[str], bool] | None = None) -> tuple[str, str]:
    """(type, entity) a (sub-)query asks about: the first rule of ``_TYPE_RULES`` that matches
    (else ``any``) and the first identifier of the query that is a KG entity (else "")."""
    anchor_type = next((t for t, rx in _TYPE_RULES if rx.search(query)), "any")
    found = [m for m in mentions(query)
             if m.entity_type in ("command", "option", "variable", "file", "message")]
    commands = [m.canonical for m in found if m.entity_type == "command"]
    for m in found:
        name = m.canonical
        if m.entity_type == "option" and " " not in name and commands:
            name = f"{commands[0]} {name}"  # "-density option of global_placement"
        if known_entity is None or known_entity(name):
            return anchor_type, name
    return anchor_type, ""


def related(entity: str, target: str) -> bool:
    """Same entity, or an option and its command (``cmd -opt`` ~ ``cmd``, ``-opt``)."""
    a, b = entity.lower(), target.lower()
    if not a or not b:
        return False
    if a == b:
        return True
    return a.startswith(b + " ") or b.startswith(a + " ") or a.endswith(" " + b) or b.endswith(" " + a)


def compatible(anchor: tuple[str, str], target: tuple[str, str],
               mentioned: frozenset[str] = frozenset()) -> bool:
    """Compat(CSA_i, CSA_target): the statement's type can answer the target type and, when the
    target names an entity, the statement is about it (anchor entity related to it) or
    mentions it."""
    a_type, a_entity = anchor
    t_type, t_entity = target
    if a_type not in TYPE_COMPAT.get(t_type, TYPE_COMPAT["any"]):
        return False
    if not t_entity:
        return True
    return related(a_entity, t_entity) or any(related(m, t_entity) for m in mentioned)


# --- LLM tasks (offline implementations = the rules above) -----------------------------------


class AnchorOut(BaseModel):
    anchor_type: str
    anchor_entity: str = ""


class SummaryOut(BaseModel):
    summary: str


class GapsOut(BaseModel):
    sub_queries: list[str] = Field(default_factory=list)


def _register_tasks() -> None:
    from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMTask, delimit, register_task

    def anchor_offline(inputs: Mapping[str, Any]) -> BaseModel:
        t, e = target_anchor(inputs["query"])
        return AnchorOut(anchor_type=t, anchor_entity=e)

    def anchor_validate(result: BaseModel, inputs: Mapping[str, Any]) -> None:
        assert isinstance(result, AnchorOut)
        if result.anchor_type not in TYPE_COMPAT:
            raise ValueError(f"anchor type {result.anchor_type!r} not in {sorted(TYPE_COMPAT)}")

    register_task(LLMTask(
        name="chipmind_anchor",
        system_prompt=("Infer the intent of a question about EDA tool documentation as a Circuit "
                       f"Semantic Anchor: anchor_type one of {', '.join(sorted(TYPE_COMPAT))} and "
                       "anchor_entity the command/option/variable/file it is about ('' if none). "
                       + DATA_NOT_INSTRUCTIONS),
        render_user=lambda i: f"Question:\n{delimit(i['query'])}",
        offline=anchor_offline, validate=anchor_validate,
    ))

    def summary_offline(inputs: Mapping[str, Any]) -> BaseModel:
        return SummaryOut(summary=" ".join(inputs["sentences"][: inputs.get("m", 4)]))

    register_task(LLMTask(
        name="chipmind_summary",
        system_prompt=("Summarise what the given documentation passages say that helps answer the "
                       "question, in at most four sentences, without adding facts. "
                       + DATA_NOT_INSTRUCTIONS),
        render_user=lambda i: (f"Question: {i['query']}\nPassages:\n"
                               f"{delimit(chr(10).join(i['passages']))}"),
        offline=summary_offline,
    ))

    def gaps_offline(inputs: Mapping[str, Any]) -> BaseModel:
        return GapsOut(sub_queries=list(inputs.get("candidate_gaps", [])))

    register_task(LLMTask(
        name="chipmind_gaps",
        system_prompt=("You reason over documentation evidence to answer a question. List the "
                       "information still missing as short, self-contained sub-queries (at most "
                       "three); return none when the evidence suffices. " + DATA_NOT_INSTRUCTIONS),
        render_user=lambda i: (f"Question: {i['query']}\nEvidence so far:\n"
                               f"{delimit(chr(10).join(i['evidence']))}"),
        offline=gaps_offline,
    ))


_register_tasks()


# --- the retriever ---------------------------------------------------------------------------


@dataclass
class Gap:
    text: str
    kind: str  # identifier | clause
    vector_key: str  # the text whose embedding seeds its retrieval
    words: tuple[str, ...] = ()


@dataclass
class ChipMindRetriever:
    snapshot: Any  # IndexSnapshot
    graph: KGGraph
    config: ChipMindConfig = field(default_factory=ChipMindConfig)
    name: str = "chipmind"
    client: Any = None  # LLMClient; None / offline -> the rules
    last_trace: dict[str, Any] = field(default_factory=dict)
    last_steps: list[list[EvidenceItem]] = field(default_factory=list)

    def __post_init__(self) -> None:
        g = self.graph
        self._emb_pos = {int(r): i for i, r in enumerate(g.embedded_rows)}
        self._passage_pos = {int(r): i for i, r in enumerate(g.passage_rows)}
        snap_row = self.snapshot._chunk_row
        # KG passage order -> snapshot chunk row (-1 when the KG is stale for that chunk)
        self._passage_snap = np.asarray([snap_row.get(c, -1) for c in g.passage_chunk], np.int64)
        self._snap_passage = {int(s): g.passage_rows[i] for i, s in enumerate(self._passage_snap) if s >= 0}
        self._units: dict[int, np.ndarray] = {}
        self._words: dict[int, frozenset[str]] = {}
        self._stmt_mentions: dict[int, frozenset[str]] = {}
        names = g.nodes["canonical"].to_list()
        for st, ents in g.statement_mentions.items():
            self._stmt_mentions[st] = frozenset(names[e] for e in ents)

    @property
    def _llm(self) -> bool:
        return self.client is not None and getattr(self.client, "provider", "offline") != "offline"

    # -- per-passage data (lazy caches) --

    def units(self, passage_node: int) -> np.ndarray:
        """Summary units of a passage: its statements' vectors (else the chunk vector)."""
        got = self._units.get(passage_node)
        if got is None:
            rows = [self._emb_pos[s] for s in self.graph.passage_statements.get(passage_node, [])
                    if s in self._emb_pos]
            if rows:
                got = self.graph.vectors[rows]
            else:
                snap = self._passage_snap[self._passage_pos[passage_node]]
                got = self.snapshot.chunk_vectors[snap: snap + 1] if snap >= 0 else np.zeros((0, self.graph.vectors.shape[1]), np.float32)
            self._units[passage_node] = got
        return got

    def words(self, passage_node: int) -> frozenset[str]:
        got = self._words.get(passage_node)
        if got is None:
            got = word_set(self.text(passage_node))
            self._words[passage_node] = got
        return got

    def text(self, passage_node: int) -> str:
        snap = self._passage_snap[self._passage_pos[passage_node]]
        return self.snapshot.chunk_records[snap]["text"] if snap >= 0 else ""

    # -- the steps --

    def rank(self, qvec: np.ndarray, query: str, depth: int) -> list[tuple[int, float]]:
        """Passage nodes by PPR mass for one (sub-)query: [(passage node row, score)]."""
        cfg, g = self.config, self.graph
        p = np.zeros(len(g.node_ids), np.float64)
        if g.vectors.shape[0]:
            sims = matvec(g.vectors, qvec)
            for i in top_indices(sims, cfg.seed_nodes):
                if sims[i] > 0:
                    p[g.embedded_rows[i]] += float(sims[i])
        peak = p.max() if p.max() > 0 else 1.0
        for m in mentions(query):
            for row in g.entity_by_name.get(m.canonical.lower(), []):
                p[row] += cfg.entity_weight * peak / np.log2(1.0 + g.entity_degree[row] + 1.0)
        if cfg.seed_passages and self.snapshot.chunk_vectors.shape[0]:
            csims = matvec(self.snapshot.chunk_vectors, qvec)
            for srow in top_indices(csims, cfg.seed_passages):
                node = self._snap_passage.get(int(srow))
                if node is not None and csims[srow] > 0:
                    p[node] += cfg.passage_weight * float(csims[srow])
        if cfg.lexical_weight > 0 and cfg.seed_passages:
            for srow, score in self._bm25(query, cfg.seed_passages):
                node = self._snap_passage.get(int(srow))
                if node is not None:
                    p[node] += cfg.lexical_weight * score
        x = g.ppr(p, alpha=cfg.damping, tol=cfg.ppr_tol)
        scores = np.where(self._passage_snap >= 0, x[g.passage_rows], -1.0)
        order = top_indices(scores, depth)
        return [(int(g.passage_rows[i]), float(scores[i])) for i in order if scores[i] > 0]

    @cached_property
    def lexical(self) -> LexicalIndex:
        return LexicalIndex([r["text"] for r in self.snapshot.chunk_records])

    def _bm25(self, query: str, n: int) -> list[tuple[int, float]]:
        """(snapshot chunk row, BM25 score / best score) of the top ``n`` chunks."""
        scores = self.lexical.scores(query)
        rows = [int(r) for r in top_indices(scores, n) if scores[r] > 0]
        top = scores[rows[0]] if rows else 0.0
        return [(r, float(scores[r] / top)) for r in rows]

    def cut(self, ranked: list[int], qvec: np.ndarray, query: str, k: int) -> tuple[list[int], list[float]]:
        cfg = self.config
        if not cfg.adaptive_k:
            return ranked[: min(cfg.fixed_k, k)], []
        summarize = None
        if self._llm:
            def summarize(items: Sequence[int]) -> np.ndarray:
                out = self.client.complete_structured(
                    "chipmind_summary", {"query": query, "passages": [self.text(i) for i in items],
                                         "sentences": [], "m": cfg.summary_sentences}, SummaryOut)
                return self.snapshot.base.encode([out.summary])[0]
        return adaptive_k(
            ranked, lambda items: np.concatenate([self.units(i) for i in items]) if items else np.zeros((0, qvec.shape[0]), np.float32),
            qvec, k0=cfg.k0, delta_k=cfg.delta_k, tau=cfg.tau, k_max=min(cfg.k_max, k),
            m=cfg.summary_sentences, summarize=summarize,
        )

    def anchor_of(self, query: str) -> tuple[str, str]:
        def known(name: str) -> bool:
            return name.lower() in self.graph.entity_by_name

        if self._llm:
            out = self.client.complete_structured("chipmind_anchor", {"query": query}, AnchorOut)
            return out.anchor_type, out.anchor_entity
        return target_anchor(query, known)

    def passage_compatible(self, node: int, target: tuple[str, str]) -> bool:
        stmts = self.graph.passage_statements.get(node, [])
        for s in stmts:
            anchor = self.graph.anchors.get(s)
            if anchor and compatible(anchor, target, self._stmt_mentions.get(s, frozenset())):
                return True
        if not stmts:  # no statement: judge by the text
            return not target[1] or target[1].lower() in self.text(node).lower()
        return False

    def filter(self, cand: list[int], target: tuple[str, str]) -> tuple[list[int], bool]:
        """(kept, fell_back): the compatible candidates; all of them when none is compatible."""
        if not self.config.anchor_filter:
            return cand, False
        kept = [c for c in cand if self.passage_compatible(c, target)]
        return (kept, False) if kept else (cand, True)

    def gaps(self, question: str, clauses: list[str], gathered: list[int], asked: set[str]) -> list[Gap]:
        """Aspects of the question the gathered passages do not cover yet (offline rules)."""
        cfg = self.config
        texts = [self.text(n).lower() for n in gathered]
        out: list[Gap] = []
        for m in mentions(question):
            if m.entity_type in ("concept", "tool") or m.surface in asked:
                continue
            needle = m.surface.lower()
            if not any(needle in t for t in texts):
                out.append(Gap(m.surface, "identifier", question))
        for clause in clauses:
            if clause in asked or clause.strip() == question.strip():
                continue
            kws = keywords(clause)
            best = max((len(set(kws) & self.words(n)) / len(kws) for n in gathered), default=0.0)
            if best < cfg.cover_threshold:
                out.append(Gap(clause, "clause", clause, tuple(kws)))
        if self._llm:
            res = self.client.complete_structured(
                "chipmind_gaps", {"query": question, "evidence": [self.text(n)[:600] for n in gathered],
                                  "candidate_gaps": [g.text for g in out]}, GapsOut)
            out = [Gap(q, "llm", q) for q in res.sub_queries if q not in asked]
        return out

    def encode_question(self, query: str, clauses: list[str]) -> dict[str, np.ndarray]:
        """Vectors of the question and its clauses: one encoder pass (``contextual``: clause =
        mean of its tokens' embeddings inside the question), or one batch (``separate``)."""
        if self.config.clause_vectors == "contextual" and clauses and hasattr(self.snapshot.base, "model"):
            spans, cursor = [], 0
            for c in clauses:
                at = query.find(c, cursor)
                at = at if at >= 0 else query.find(c)
                spans.append((at, at + len(c)) if at >= 0 else (0, 0))
                cursor = at + len(c) if at >= 0 else cursor
            qvec, cvecs = contextual_vectors(self.snapshot.base, query, spans)
            out = {query: qvec}
            missing = [c for c, v in zip(clauses, cvecs, strict=True) if v is None]
            out.update({c: v for c, v in zip(clauses, cvecs, strict=True) if v is not None})
            if missing:
                out.update(zip(missing, self.snapshot.base.encode(missing), strict=True))
            return out
        texts = list(dict.fromkeys([query, *clauses]))
        return dict(zip(texts, self.snapshot.base.encode(texts), strict=True))

    def _item(self, node: int, score: float, path: str) -> EvidenceItem:
        snap = int(self._passage_snap[self._passage_pos[node]])
        rec = self.snapshot.chunk_records[snap]
        return EvidenceItem(chunk_id=rec["chunk_id"], doc=rec["document"], text=rec["text"],
                            score=float(score), path=path, start_line=rec["start_line"],
                            end_line=rec["end_line"], page=rec["page"])

    def retrieve(self, query: str, k: int) -> list[EvidenceItem]:
        cfg = self.config
        t0 = time.perf_counter()
        clauses = question_clauses(query) if cfg.iterate else []
        vec_of = self.encode_question(query, clauses)
        t_enc = time.perf_counter()
        depth = max(cfg.k_max, k, cfg.fixed_k)
        gathered: list[int] = []
        scores: dict[int, float] = {}
        paths: dict[int, str] = {}
        steps: list[dict[str, Any]] = []
        self.last_steps = []

        def step(q: str, qvec: np.ndarray, iteration: int, label: str) -> int:
            ranked = self.rank(qvec, q, depth)
            order = [n for n, _ in ranked]
            score_of = dict(ranked)
            top = max(score_of.values(), default=1.0) or 1.0
            cand, migs = self.cut(order, qvec, q, k)
            target = self.anchor_of(q)
            kept, fell_back = self.filter(cand, target)
            new = [n for n in kept if n not in scores]
            for n in new:
                gathered.append(n)
                scores[n] = score_of[n] / top / (1 + iteration)
                paths[n] = label
            self.last_steps.append([self._item(n, score_of[n] / top, label) for n in cand])
            steps.append({
                "iteration": iteration, "query": q, "target_anchor": list(target), "k": len(cand),
                "migs": [round(x, 6) for x in migs], "candidates": [self.graph.node_ids[n] for n in cand],
                "kept": [self.graph.node_ids[n] for n in kept], "new": len(new),
                "filter_fallback": fell_back,
            })
            return len(new)

        step(query, vec_of[query], 0, "chipmind")
        sizes = [len(gathered)]
        asked: set[str] = set()
        iterations = 1
        if cfg.iterate:
            for it in range(1, cfg.max_iterations + 1):
                todo = self.gaps(query, clauses, gathered, asked)[: cfg.max_subqueries]
                if not todo:
                    break
                iterations += 1
                added = 0
                need = [g.vector_key for g in todo if g.vector_key not in vec_of]
                if need:
                    for key, vec in zip(need, self.snapshot.base.encode(need), strict=True):
                        vec_of[key] = vec
                for g in todo:
                    asked.add(g.text)
                    sub = g.text if g.kind != "identifier" else f"{g.text} {query}"
                    added += step(sub, vec_of[g.vector_key], it, f"chipmind:sub{it}")
                sizes.append(len(gathered))
                if not added:
                    break
        items = [self._item(n, scores[n], paths[n]) for n in gathered[:k]]
        t_end = time.perf_counter()
        all_ids = list(dict.fromkeys(c for s in steps for c in s["candidates"]))
        self.last_trace = {
            "method": self.name, "iterations": iterations, "retrieved_set_sizes": sizes,
            "sub_queries": [s["query"] for s in steps[1:]],
            "target_anchor": steps[0]["target_anchor"], "steps": steps,
            "all_retrieved": all_ids, "n_all_retrieved": len(all_ids), "returned": len(items),
            "encode_ms": round((t_enc - t0) * 1000, 3), "graph_ms": round((t_end - t_enc) * 1000, 3),
        }
        return items


# --- factories -------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def _graph_for(storage: str, lancedb_uri: str) -> KGGraph:
    return load_graph(storage, lancedb_uri)


def make_chipmind(snapshot: Any, name: str = "chipmind", *, client: Any = None,
                  **overrides: Any) -> ChipMindRetriever:
    """A ChipMind retriever over the KG stored next to ``snapshot`` (loaded once per storage
    and process: rebuild -> ``_graph_for.cache_clear()``). ``client``: an LLM client for the
    anchor / summary / gap tasks (e.g. ``edaqa_pipeline.llm.client_from_env()``); the
    factories use the offline rules."""
    graph = _graph_for(str(snapshot.storage), str(snapshot.lancedb_uri))
    return ChipMindRetriever(snapshot, graph, replace(ChipMindConfig(), **overrides), name=name,
                             client=client)


def chipmind(snapshot: Any) -> ChipMindRetriever:
    return make_chipmind(snapshot, "chipmind")


def chipmind_no_adaptive_k(snapshot: Any) -> ChipMindRetriever:
    return make_chipmind(snapshot, "chipmind_no_adaptive_k", adaptive_k=False)


def chipmind_no_filter(snapshot: Any) -> ChipMindRetriever:
    return make_chipmind(snapshot, "chipmind_no_filter", anchor_filter=False)


def chipmind_no_iteration(snapshot: Any) -> ChipMindRetriever:
    return make_chipmind(snapshot, "chipmind_no_iteration", iterate=False)


FACTORIES: dict[str, Callable[[Any], ChipMindRetriever]] = {
    "chipmind": chipmind,
    "chipmind_no_adaptive_k": chipmind_no_adaptive_k,
    "chipmind_no_filter": chipmind_no_filter,
    "chipmind_no_iteration": chipmind_no_iteration,
}

__all__ = [
    "FACTORIES", "TYPE_COMPAT", "ChipMindConfig", "ChipMindRetriever", "adaptive_k", "chipmind",
    "chipmind_no_adaptive_k", "chipmind_no_filter", "chipmind_no_iteration", "compatible",
    "keywords", "make_chipmind", "mig", "question_clauses", "related", "summary_embedding",
    "target_anchor",
]
