"""The one partitioning of the pipeline: a dynamic partition per source document.

Keys are document paths relative to the corpus root (``corpus.scan.document_key``); the
corpus sensor and ``edaqa index`` add and delete keys as files appear and disappear.

``DOCUMENT_ASSETS`` lists the per-document assets in dependency order (what the
``index_document`` job materialises); every one of them is built with
``assets.per_document.document_asset``. The run tags below change how such a step treats a
document that cannot be built (see ``per_document``).
"""

from dagster import DynamicPartitionsDefinition

DOCUMENTS = "documents"
documents_partitions = DynamicPartitionsDefinition(name=DOCUMENTS)

DOCUMENT_ASSETS = (
    "parsed_documents", "typed_artifacts", "chunks", "occurrences", "chunk_embeddings",
    "datasheet_chunks", "datasheet_properties", "elements",
)

# "1": a document that fails is left out of the step's outputs and reported, the other
# documents go on (default for runs of more than one document); "0": it fails the step.
ISOLATE_FAILURES_TAG = "edaqa/isolate_failures"
# "1": recompute every document of the run, even those whose stored output is current.
FORCE_TAG = "edaqa/force"
