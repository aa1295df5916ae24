"""ChipMind's circuit-semantic knowledge graph (ChipKG, paper 001).

* ``extract``: per sentence (prose sentence, option-table row, command synopsis) a JSON
  intermediate representation, a Circuit Semantic Anchor and four kinds of triples
  (backbone, auxiliary, linking, normalisation); deterministic rules offline, the LLM task
  ``chipkg_triples`` when a model is configured.
* ``graph``: the KG as Polars tables, node embeddings, Personalized PageRank.

The ``chipmind`` retriever lives in ``edaqa_pipeline.methods.chipmind``.
"""
