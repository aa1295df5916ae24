"""The shared text toolkit: identifiers (``identifiers``), tokens, stems and stop words
(``tokens``), sentences (``sentences``) and token counts (``counting``). Every extractor,
retriever, metric and answer check uses these; nothing here imports another package."""
