"""ChipMind: a circuit-semantic knowledge graph (ChipKG) and KG-augmented multi-hop retrieval.

* ``extract``: per sentence (prose sentence, option-table row, command synopsis) a JSON
  intermediate representation, a Circuit Semantic Anchor and four kinds of triples
  (backbone, auxiliary, linking, normalisation); deterministic rules offline, the LLM task
  ``chipkg_triples`` when a model is configured.
* ``graph``: the KG as Polars tables, node embeddings, Personalized PageRank.
* ``retriever``: the ``chipmind`` retriever (adaptive top-K by marginal information gain,
  CSA-guided filtering, the iterative sub-query loop) and its ablations.
* ``metrics``: ``system_recall@k``.

Nothing here imports Dagster; ``edaqa_pipeline.assets.chipkg`` wraps the build as an asset.
"""
