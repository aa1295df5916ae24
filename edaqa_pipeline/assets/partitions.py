"""The one partitioning of the pipeline: a dynamic partition per source document.

Keys are document paths relative to the corpus root (``corpus.scan.document_key``); the
corpus sensor and ``edaqa index`` add and delete keys as files appear and disappear.
"""

from dagster import DynamicPartitionsDefinition

DOCUMENTS = "documents"
documents_partitions = DynamicPartitionsDefinition(name=DOCUMENTS)
