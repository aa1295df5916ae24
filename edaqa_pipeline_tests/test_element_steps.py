"""The shared retrieval steps over the element graph (``graphs.elements``: recall, expansion,
bundles, packing, summary vectors) on a hand-written manual with the packaged MiniLM encoder,
and the ``techdoc`` retriever's ``Retrieval`` record, registry factory and LLM query analysis
(a real SmolLM2 server)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import polars as pl
import pytest

from edaqa_pipeline.graphs.elements import bundles, expansion, graph, intent, recall, store
from edaqa_pipeline.graphs.elements.index import ElementIndex
from edaqa_pipeline.parsing.markdown import parse_markdown
from edaqa_pipeline.retrieval.embedder import Embedder
from edaqa_pipeline.retrieval.encoders import base_encoder
from edaqa_pipeline.retrieval.record import Retrieval
from edaqa_pipeline.text import identifiers
from edaqa_pipeline.text.tokens import tokens
from edaqa_pipeline_tests._helpers_elements import PLACER, ROUTER


@pytest.fixture(scope="module")
def frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    blocks = {name: parse_markdown(text.encode(), name)[1] for name, text in
              (("placer.md", PLACER), ("router.md", ROUTER))}
    return graph.frames(*graph.build_corpus(blocks))


@pytest.fixture(scope="module")
def index(frames) -> ElementIndex:  # type: ignore[no-untyped-def]
    nodes, edges = frames
    return ElementIndex(nodes, edges, store.embed_summaries(nodes, Embedder(base_encoder())))


def node(index: ElementIndex, etype: str, contains: str) -> int:
    hits = [i for i in range(len(index)) if index.type[i] == etype and contains in index.raw[i]]
    assert hits, (etype, contains)
    return hits[0]


# --- recall -------------------------------------------------------------------------------------


def test_identifier_recall_combines_its_three_terms(index: ElementIndex) -> None:
    query = "What does the -density option of place_cells do?"
    ids, toks = identifiers.query_identifiers(query), tokens(query)
    seeds = recall.identifier_recall(index, ids, toks, 10)
    assert seeds and len(seeds) <= 10
    assert [s for _, s in seeds] == sorted((s for _, s in seeds), reverse=True)
    assert "place_cells -density" in index.identifiers[seeds[0][0]]
    # each term on its own: BM25 alone ranks as the shared lexical index does
    lexical_only = recall.identifier_recall(index, ids, toks, 10, recall.RecallWeights(identifier=0.0, meta=0.0))
    expected = index.lexical.top(toks, 10)
    assert [n for n, _ in lexical_only] == [n for n, _ in expected]
    id_scores = recall.identifier_scores(index, ids)
    assert id_scores and max(id_scores.values()) <= 1.0
    assert all(set(ids) & set(index.identifiers[n]) for n in id_scores)
    assert recall.meta_score(index, seeds[0][0], frozenset(tokens("placer commands"))) > 0


def test_fuzzy_identifiers_count_their_ratio(index: ElementIndex) -> None:
    exact = recall.identifier_scores(index, ["ROUTE_LAYERS"])
    fuzzy = recall.identifier_scores(index, ["ROUTE_LAYER5"])  # an OCR-like confusion
    assert set(fuzzy) == set(exact)
    assert all(0 < fuzzy[n] < exact[n] for n in exact)
    assert recall.identifier_scores(index, ["completely_unrelated_name"]) == {}


# --- expansion ----------------------------------------------------------------------------------


def test_expansion_follows_the_policy_relations_only(index: ElementIndex) -> None:
    seeds = recall.identifier_recall(index, ["check_placement"], tokens("legalize check_placement"), 3)
    policy = intent.POLICIES["procedure"]
    reached = expansion.expand(index, seeds, policy)
    assert {n for n, _ in seeds} <= set(reached)
    assert any(r.hops > 0 for r in reached.values())
    for n, r in reached.items():
        if r.hops == 0:
            assert r.relation == "recall"
            continue
        assert r.relation in policy.relations and r.hops <= policy.max_hops
        assert any(rel == r.relation for _, rel, _ in index.adj[n])
        assert r.score <= 0.5**r.hops + 1e-12  # RelScore: normalised seed score, halved per hop
    assert set(expansion.expand(index, seeds, intent.Policy("x", policy.relations, 0, ()))) == {n for n, _ in seeds}
    narrow = expansion.expand(index, seeds, policy, expansion.ExpansionLimits(fanout=1, max_expanded=len(seeds) + 1))
    assert len(narrow) == len(seeds) + 1


# --- bundles and packing ------------------------------------------------------------------------


def test_raw_bundles_row_with_header_and_whole_procedure(index: ElementIndex) -> None:
    row = node(index, "table_row", "-density")
    b = bundles.assemble(index, row, 1.0, "recall", ("table_header",), 2600)
    assert [(m.role, m.header_only) for m in b.members] == [("core", False), ("table_header", True)]
    items = bundles.pack(index, [b], 10, 8192, "edaqa")
    text = "\n".join(i.text for i in items)
    assert "| Switch Name | Description |" in text and "| `-density` | Target density" in text
    assert items[0].path == "edaqa:recall" and index.ids[row] in items[0].element_ids
    first = node(index, "step", "1. Run")
    chain = bundles.procedure_chain(index, first)
    assert [index.type[n] for n in chain] == ["step"] * 3
    assert [index.ordinal[n] for n in chain] == sorted(index.ordinal[n] for n in chain)
    whole = bundles.assemble(index, chain[-1], 1.0, "recall", ("procedure_steps",), 2600)
    assert {m.node for m in whole.members} == set(chain)
    alone = bundles.assemble(index, row, 1.0, "recall", (), 2600)
    assert [m.node for m in alone.members] == [row]
    with pytest.raises(ValueError, match="unknown bundle roles"):
        bundles.assemble(index, row, 1.0, "recall", ("everything",), 2600)


def test_pack_respects_budget_k_and_ids(index: ElementIndex) -> None:
    cores = [node(index, "clause", "2.1 Place Cells"), node(index, "step", "2. Run"), node(index, "table_row", "ROUTE_LAYERS")]
    made = [bundles.assemble(index, c, 1.0 - n / 10, "recall", ("section_title", "scope"), 2600) for n, c in enumerate(cores)]
    for budget in (400, 1200, 8192):
        items = bundles.pack(index, made, 10, budget, "techdoc")
        assert items and sum(len(i.text) for i in items) <= budget
        assert all(i.chunk_id == "" and i.element_ids for i in items)
        assert index.ids[cores[0]] in items[0].element_ids  # the first bundle's core comes first
    assert len(bundles.pack(index, made, 2, 8192, "techdoc")) == 2
    for item in bundles.pack(index, made, 10, 8192, "techdoc"):  # an item is its members' raw text
        rows = [index.row[e] for e in item.element_ids]
        assert all(index.raw[r] in item.text or index.header_raw[r] in item.text for r in rows)


# --- summary vectors ----------------------------------------------------------------------------


def test_summary_vectors_are_reused_by_key(frames, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    nodes, _ = frames
    encoder = base_encoder()
    uri = str(tmp_path / "lancedb")
    first = store.summary_embedder(encoder, uri)
    vectors = store.embed_summaries(nodes, first)
    assert first.encoded == nodes.height and vectors.shape == (nodes.height, encoder.dim)
    store.write_lance(uri, nodes, vectors, encoder.encoder_id)
    again = store.summary_embedder(encoder, uri)
    assert (store.embed_summaries(nodes, again) == vectors).all() and again.encoded == 0
    changed = nodes.with_columns(pl.when(pl.col("element_type") == "code").then(pl.lit("changed"))
                                 .otherwise(pl.col("summary")).alias("summary"))
    third = store.summary_embedder(encoder, uri)
    store.embed_summaries(changed, third)
    assert third.encoded == changed.filter(pl.col("element_type") == "code").height > 0


# --- the techdoc retriever ----------------------------------------------------------------------


def test_techdoc_returns_a_retrieval_record(index: ElementIndex) -> None:
    from edaqa_pipeline.methods.techdoc.retriever import TechDocRetriever

    retriever = TechDocRetriever(index, base_encoder())
    query = "What does the -density option of place_cells do?"
    result = retriever.retrieve(query, 10)
    assert isinstance(result, Retrieval) and result.method == "techdoc" and result.query == query
    assert result.trace["intent"] == intent.rule_intent(query)
    assert result.trace["recalled"] and result.trace["bundles"]
    assert json.loads(json.dumps(result.to_json()))["trace"] == result.trace
    assert {"analysis", "recall", "expansion", "rerank", "bundling", "packing", "total"} <= set(result.timings_ms)
    assert not hasattr(retriever, "last_trace")
    # nothing is kept per query: concurrent calls give what sequential ones give
    queries = [query, "How do I legalize a placement?", "Which layers does ROUTE_LAYERS select?"]
    sequential = [retriever.retrieve(q, 10).items for q in queries]
    got: dict[int, tuple] = {}
    threads = [threading.Thread(target=lambda n=n, q=q: got.__setitem__(n, retriever.retrieve(q, 10).items))
               for n, q in enumerate(queries)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [got[n] for n in range(len(queries))] == sequential


def test_registry_builds_techdoc_by_its_factory_name() -> None:
    from edaqa_pipeline import registry
    from edaqa_pipeline.methods.techdoc.retriever import make_techdoc

    assert registry.method("techdoc").load_factory() is make_techdoc


@pytest.mark.llm
def test_query_analysis_through_the_llm(smollm2_base_url, index: ElementIndex, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from edaqa_pipeline.llm import OfflineClient, OpenAICompatibleClient
    from edaqa_pipeline.methods.techdoc.retriever import TechDocRetriever

    client = OpenAICompatibleClient(base_url=smollm2_base_url, api_key=None, model="smollm2",
                                    cache_dir=tmp_path / "cache", timeout_s=120, max_retries=1,
                                    validation_retries=3, max_tokens=128, fallback=None)
    query = "How do I legalize a placement with check_placement?"
    result = TechDocRetriever(index, base_encoder(), llm=client).retrieve(query, 10)
    assert client.stats.calls >= 1  # the model decided the intent (shape only: it is tiny)
    assert result.trace["intent"] in intent.INTENTS and result.items
    assert set(identifiers.query_identifiers(query)) <= set(result.trace["identifiers"])
    offline = intent.analyze(query, OfflineClient())
    assert offline.intent == intent.rule_intent(query)
