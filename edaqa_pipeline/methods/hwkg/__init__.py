"""The hwkg retrieval method; see edaqa_pipeline.registry."""
