"""EDAQA: question answering over EDA documentation, as a Dagster pipeline.

Domain code lives in the sub-packages (parsing, extraction, graphs, retrieval, generation,
evaluation, llm, training) and never imports dagster; the Dagster layer (assets, checks,
sensors, schedules, resources, definitions) wraps it thinly.
"""
