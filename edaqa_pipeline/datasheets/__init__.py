"""Hierarchical hardware knowledge graphs from PDF datasheets (see docs/hardware_kg.md).

* ``chunks``: extraction chunks (tables whole, prose at sentence boundaries), page + bbox;
* ``tables``: header rows, continuations and column roles of datasheet tables;
* ``properties``: offline header-aware extraction and the ``datasheet_properties`` LLM task;
* ``skeletons``: hardware categories, block skeletons, category descriptions;
* ``instructions``: the instruction schema, its validator and deterministic executor;
* ``kg``: routing / refinement / rerouting (offline rules and LLM tasks), output tables;
* ``faithfulness``: offline check and the LLM judge task;
* ``retrieval``: the block-first ``hwkg`` retriever.

No module here imports Dagster; the assets live in ``edaqa_pipeline.assets.datasheets``.
"""
