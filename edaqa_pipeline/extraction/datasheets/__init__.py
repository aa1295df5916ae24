"""Datasheet extraction (PDF): chunks (tables whole, prose at sentence boundaries, page +
bbox), table headers and continuations, and property extraction (offline rules and the
``datasheet_properties`` LLM task)."""
