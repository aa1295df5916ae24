"""Retrieval methods, one package or module per paper, each built on the shared toolkit
(``text``, ``retrieval``, ``graphs``) only: no method imports another. The registry that
names them is ``edaqa_pipeline.registry``."""
