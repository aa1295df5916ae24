"""The chipmind retrieval method; see edaqa_pipeline.registry."""
