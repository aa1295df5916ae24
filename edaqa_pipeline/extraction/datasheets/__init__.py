"""Datasheet chunks and engineering properties from parsed PDF blocks (paper 002, I-A and I-B):
``chunks`` (and ``tables``) make the bounded source contexts, ``properties`` is the entry point
of extraction (offline rules in ``rules``, ``spec_rules``, ``grid_rules``, ``prose_rules``; the
LLM task in ``property_llm``)."""
