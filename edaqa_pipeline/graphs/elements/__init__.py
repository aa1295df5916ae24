"""The element graph (TechDocRAG, paper 003): typed document elements, relation edges and the
three views (identifiers, summary, raw evidence), plus the retrieval steps over it that any
method may compose. No method lives here: ``methods.techdoc`` composes these steps with
TechDocRAG's weights, ``methods.edaqa`` with its own.

Public API
==========

Building (``graph``, the one import point; used by the assets and the benchmarks):

* ``graph.build_document(blocks) -> (node rows, edge rows)``: one document's elements and
  in-document edges (rule groups: ``node_rules``, ``link_rules``; patterns ``rules``;
  schemas ``schema``; state ``builder``).
* ``graph.corpus_edges(rows) -> (edges, version labels)``, ``graph.build_corpus(blocks_by_doc)``,
  ``graph.frames(rows, edges) -> (nodes, edges)`` frames, ``graph.graph_problems(nodes, edges)``.
* ``store``: the element tables and LanceDB ``elements``: ``load_graph(storage, documents)``,
  ``summary_embedder(encoder, uri)`` / ``embed_summaries(nodes, embedder)`` (the shared
  ``Embedder``), ``write_lance(uri, nodes, vectors, encoder_id)``.

Querying:

* ``index.load_index(snapshot, k1=1.2, b=0.75) -> ElementIndex``: the graph of an
  ``IndexSnapshot`` with the identifier view as a ``LexicalIndex``, identifier postings and
  vocabulary, summary vectors (``index.vectors``, row = node position), adjacency, coverage
  (``coverage`` / ``text`` / ``span`` of a node) and clause scopes. ``ElementIndex(nodes,
  edges, vectors)`` builds one from frames.
* ``intent.analyze(query, llm=None) -> QueryAnalysis`` (identifiers, search tokens, intent,
  ``Policy``); ``intent.POLICIES`` (Table 1: relations, hops, type prior, bundle roles);
  ``intent.rule_intent(query)``.
* ``recall.identifier_recall(index, query_identifiers, query_tokens, k, RecallWeights(...))
  -> [(node, score)]`` (equation 9), and its parts ``lexical_scores``, ``identifier_scores``,
  ``meta_score``.
* ``expansion.expand(index, seeds, policy, ExpansionLimits(...)) -> {node: Reached(score,
  relation, hops)}`` (equation 10).
* ``bundles.assemble(index, core, score, relation, roles, max_chars) -> Bundle`` (roles in
  ``bundles.ROLES``: e.g. ``("table_header",)`` for a row with its header,
  ``("procedure_steps",)`` for every step of a procedure; a code block is one element) and
  ``bundles.pack(index, bundles, k, budget_chars, path_prefix) -> [EvidenceItem]``
  (``element_ids`` = the member elements, ``chunk_id`` empty).
* ``summaries``: the offline summary and the ``element_summary`` LLM task.
"""
