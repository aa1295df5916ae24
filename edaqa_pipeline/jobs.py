"""Jobs: build documents (their partitions of every per-document asset), the corpus, or both.

* ``build_index``: the per-document assets over a range of document partitions AND the
  cross-document assets after them, in one run: what ``edaqa index``, the corpus sensor and
  the nightly schedule launch (tagged ``ISOLATE_FAILURES_TAG``: a document that fails is
  reported, the others and the corpus assets go on).
* ``index_document``: the per-document assets alone; a run of one partition is strict (a
  document that fails fails the run, named), which is how a failed document is re-run so that
  its partition shows the failure in the UI.
* ``assemble_corpus``: the cross-document assets alone (e.g. after documents were deleted).

The per-document assets run with ``BackfillPolicy.single_run()``: one step covers every
document of a run. Every step of these jobs reports its end to ``assets.progress``.
"""

from dagster import AssetSelection, define_asset_job

from edaqa_pipeline.assets.partitions import DOCUMENT_ASSETS, documents_partitions
from edaqa_pipeline.assets.progress import STEP_HOOKS
from edaqa_pipeline.registry import BUILD_OPTIONS

__all__ = ["CORPUS_ASSETS", "DOCUMENT_ASSETS"]

CORPUS_ASSETS = (
    "unit_hyperedges", "unit_nodes", "unit_provenance", "unit_chunk_edges",
    "unit_chunk_contents", "unit_type_bags", "unit_rejections", "unit_embeddings", "chunk_index",
    "hardware_kgs", "hardware_kg_instructions", "release_changes",
)

document_selection = AssetSelection.assets(*DOCUMENT_ASSETS)
corpus_selection = AssetSelection.assets(*CORPUS_ASSETS)

build_index_job = define_asset_job(
    "build_index",
    selection=document_selection | corpus_selection,
    partitions_def=documents_partitions,
    hooks=STEP_HOOKS,
    description="Every per-document asset over a range of documents (one step each), then the "
    "cross-document assets: one run for a whole (incremental) build.",
)
index_document_job = define_asset_job(
    "index_document",
    selection=document_selection,
    partitions_def=documents_partitions,
    hooks=STEP_HOOKS,
    description="Parse, extract, chunk, group and embed documents (one partition or a range).",
)
evaluate_job = define_asset_job(
    "evaluate", selection=AssetSelection.assets("eval_reports"), hooks=STEP_HOOKS,
    description="Run the evaluation report on the current indexes.",
)
assemble_corpus_job = define_asset_job(
    "assemble_corpus",
    selection=corpus_selection,
    hooks=STEP_HOOKS,
    description="Cross-document assets: functional units, unit embeddings, chunk index.",
)

# The optional builds (`edaqa index --with NAME`), one job each, from the method registry.
OPTIONAL_JOBS = {
    option.name: define_asset_job(option.job, selection=AssetSelection.assets(*option.assets),
                                  description=option.description, hooks=STEP_HOOKS)
    for option in BUILD_OPTIONS if option.job != evaluate_job.name
}
build_chip_kg_job = OPTIONAL_JOBS["chipkg"]
build_element_graph_job = OPTIONAL_JOBS["techdoc"]
train_encoder_job = OPTIONAL_JOBS["train"]

# `edaqa index --with NAME` -> job name, in the registry's order (eval last: it compares every
# method built before it).
EXTRA_JOBS = {option.name: option.job for option in BUILD_OPTIONS}
