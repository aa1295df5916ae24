"""Jobs: index one document (its partition of every per-document asset) and assemble the corpus."""

from dagster import AssetSelection, define_asset_job

from edaqa_pipeline.assets.partitions import documents_partitions

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

build_chip_kg_job = define_asset_job(
    "build_chip_kg",
    selection=AssetSelection.assets("chip_kg_nodes", "chip_kg_triples"),
    description="ChipKG (paper 001): sentence IR, anchors, triples, node vectors.",
)

build_element_graph_job = define_asset_job(
    "build_element_graph",
    selection=AssetSelection.assets("element_graph"),
    description="TechDocRAG (paper 003): cross-document element edges, identifier index, summary vectors.",
)

train_encoder_job = define_asset_job(
    "train_encoder",
    selection=AssetSelection.assets("training_pairs", "trained_encoder", "tuned_embeddings"),
    description="Function-aware encoder (paper 000): unit-derived queries, LoRA contrastive "
    "training, tuned vectors for fa_hybrid_tuned. Not retrained when the units are unchanged.",
)

# `edaqa index --with NAME`: method-specific graphs built after the corpus assets.
EXTRA_JOBS = {
    "chipkg": build_chip_kg_job.name,
    "techdoc": build_element_graph_job.name,
    "train": train_encoder_job.name,
    "eval": evaluate_job.name,  # last: its default compares every method built before it
}
