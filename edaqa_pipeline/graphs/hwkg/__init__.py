"""Hierarchical hardware knowledge graphs from PDF datasheets (paper 002, docs/hardware_kg.md).

* build: ``kg`` (skeleton, routing, refinement iterations), ``routing`` and ``refinement``
  (offline rules), ``tasks`` (the LLM tasks), ``instructions`` (the answer schema),
  ``graph`` (state and queries), ``executor`` (validation and execution), ``schema``
  (published tables), ``checks`` (blocking checks);
* evaluation (paper IV): ``faithfulness``, ``oneshot`` (baseline), ``normalisation``,
  ``completeness``, ``paper_metrics``; ``recall`` (property recall on a gold list).

The datasheet chunks and properties they are built from are in
``edaqa_pipeline.extraction.datasheets``; the ``hwkg`` retriever in ``edaqa_pipeline.methods.hwkg``.
"""
