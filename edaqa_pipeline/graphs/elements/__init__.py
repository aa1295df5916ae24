"""TechDocRAG's element graph (paper 003): typed document elements, relation edges and the
three retrieval views (identifiers, summary, raw evidence).

Modules: ``views`` (identifier view, canonicalisation), ``summaries`` (summary view),
``document_graph`` / ``corpus_graph`` / ``graph`` (nodes and edges by explicit rules),
``graph_checks``, ``intent`` (query intent and the expansion policy of the paper's Table 1),
``index`` (the element graph loaded for querying) and ``store`` (element tables and vectors).
The ``techdoc`` retriever that searches it lives in ``edaqa_pipeline.methods.techdoc``.
"""
