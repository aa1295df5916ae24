"""Jobs: index one document (its partition of every per-document asset) and assemble the corpus."""

from dagster import AssetSelection, define_asset_job

from edaqa_pipeline.assets.partitions import documents_partitions
from edaqa_pipeline.registry import BUILD_OPTIONS

DOCUMENT_ASSETS = (
    "parsed_documents", "typed_artifacts", "chunks", "occurrences", "chunk_embeddings",
    "datasheet_chunks", "datasheet_properties", "elements",
)
CORPUS_ASSETS = (
    "unit_hyperedges", "unit_nodes", "unit_provenance", "unit_chunk_edges",
    "unit_chunk_contents", "unit_type_bags", "unit_rejections", "unit_embeddings", "chunk_index",
    "hardware_kgs", "hardware_kg_instructions",
)

document_selection = AssetSelection.assets(*DOCUMENT_ASSETS)
corpus_selection = AssetSelection.assets(*CORPUS_ASSETS)

index_document_job = define_asset_job(
    "index_document",
    selection=document_selection,
    partitions_def=documents_partitions,
    description="Parse, extract, chunk, group and embed one document (one partition).",
)
evaluate_job = define_asset_job(
    "evaluate", selection=AssetSelection.assets("eval_reports"),
    description="Run the evaluation report on the current indexes.",
)
assemble_corpus_job = define_asset_job(
    "assemble_corpus",
    selection=corpus_selection,
    description="Cross-document assets: functional units, unit embeddings, chunk index.",
)

# The optional builds (`edaqa index --with NAME`), one job each, from the method registry.
OPTIONAL_JOBS = {
    option.name: define_asset_job(option.job, selection=AssetSelection.assets(*option.assets),
                                  description=option.description)
    for option in BUILD_OPTIONS if option.job != evaluate_job.name
}
build_chip_kg_job = OPTIONAL_JOBS["chipkg"]
build_element_graph_job = OPTIONAL_JOBS["techdoc"]
train_encoder_job = OPTIONAL_JOBS["train"]

# `edaqa index --with NAME` -> job name, in the registry's order (eval last: it compares every
# method built before it).
EXTRA_JOBS = {option.name: option.job for option in BUILD_OPTIONS}
