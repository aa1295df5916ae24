"""The techdoc retrieval method; see edaqa_pipeline.registry."""
