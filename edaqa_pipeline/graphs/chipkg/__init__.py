"""ChipMind's circuit-semantic knowledge graph (ChipKG, paper 001), one module per job:

* ``schema``: the sentence IR (category, frame, Circuit Semantic Anchor, triples), entity types
  per document kind (tool manuals / circuit specifications), provenance labels;
* ``context``, ``units``: a document's sentence units (prose sentences, table rows (every table is a
  pipe table), code blocks, headings) and what a rule knows about each;
* ``mentions`` / ``spec_mentions``: the entities a sentence names (manual / specification);
* ``prose``, ``qualifiers``, ``tables``, ``spec_tables``, ``code``: the offline rules;
* ``llm_task``: the LLM task ``chipkg_triples`` (prose, when a model is configured);
* ``document``: one document -> node and triple rows; ``store``: the corpus tables, built
  incrementally; ``vectors``: node vectors; ``checks``: the asset checks;
* ``ppr``, ``graph``: Personalized PageRank and the loaded graph.

The ``chipmind`` retriever lives in ``edaqa_pipeline.methods.chipmind``; the ``chip_kg`` asset
in ``edaqa_pipeline.assets.chipkg``.
"""
