"""Hierarchical hardware knowledge graphs from PDF datasheets (paper 002, docs/hardware_kg.md).

* ``skeletons``: hardware categories, block skeletons, category descriptions;
* ``instructions``: the instruction schema, its validator and deterministic executor;
* ``kg``: routing / refinement / rerouting (offline rules and LLM tasks), output tables;
* ``faithfulness``: offline check and the LLM judge task.

The datasheet chunks and properties they are built from are in
``edaqa_pipeline.extraction.datasheets``; the ``hwkg`` retriever in ``edaqa_pipeline.methods.hwkg``.
"""
