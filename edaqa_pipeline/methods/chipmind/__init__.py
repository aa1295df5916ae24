"""The chipmind retrieval method (paper 001): config, adaptive K, anchors, query analysis,
LLM tasks, one retrieval step (search), the reasoning loop and the retriever; see
edaqa_pipeline.registry."""
