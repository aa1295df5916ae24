"""TechDocRAG element graph: typed document elements, relation edges, three retrieval views,
intent-aware expansion and raw evidence bundles (retriever ``techdoc``).

Modules: ``views`` (identifiers, canonicalisation, summaries, tokens), ``graph`` (nodes and
edges by explicit rules), ``query`` (query analysis and the expansion policy of the paper's
Table 1), ``retriever`` (the coarse-to-fine retriever and claim-level provenance), ``metrics``
(rehr@K at L0-L4, ecr, poa, csr) and ``store`` (element tables and vectors on disk).
"""
