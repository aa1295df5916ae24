"""Training assets of the function-aware encoder (group ``training``).

* ``training_pairs``: queries generated from the functional units (unit-level templates, or the
  LLM through the ``training_queries`` task when one is configured, plus row-level queries from
  parameter tables, diagnostics and procedure steps), each with its required types T_q, its
  positive unit, its train/validation side (85/15 by unit) and 7 negatives from the mixed
  sampler (3 type-hard / 2 identifier-hard / 1 semantic-hard / 1 random) with their coverage
  kappa.
* ``trained_encoder``: the LoRA adapter trained on those pairs, stored under
  ``STORAGE/encoders/<training-data hash>-<config digest>/`` with its card; a one-row table
  points at it. Versioned by the training-data hash: when the pairs (and the unit texts they
  use) and the config are unchanged, the existing adapter and card are returned, not retrained.
* ``tuned_embeddings``: every chunk and unit summary in the tuned space (Parquet), so that
  ``fa_hybrid_tuned`` never re-encodes the corpus to answer a query.

Materialised by the ``train_encoder`` job (``edaqa index --with train``, or ``edaqa train`` on
an indexed storage root); no automation condition, since a retrain is an explicit decision.
"""

from collections.abc import Iterator

import polars as pl
from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    Config,
    MetadataValue,
    Output,
    ResourceParam,
    asset,
)
from pydantic import Field

from edaqa_pipeline.assets.io_manager import CorpusParquetIOManager
from edaqa_pipeline.assets.units import ALL_PARTITIONS
from edaqa_pipeline.checks import problems_result
from edaqa_pipeline.model import CHUNKS_SCHEMA
from edaqa_pipeline.resources import LLMResource, PipelineSettings
from edaqa_pipeline.storage.hashing import content_hash
from edaqa_pipeline.training.config import TrainConfig
from edaqa_pipeline.training.pairs import split_problems
from edaqa_pipeline.training.sampler import sampler_problems

GROUP = "training"
_DEFAULTS = TrainConfig()


@asset(
    code_version="3",
    group_name=GROUP,
    kinds={"python", "polars", "parquet"},
    pool="llm",
    check_specs=[
        AssetCheckSpec("split_disjoint_by_unit", asset="training_pairs", blocking=True,
                       description="no unit (nor anchor group) on both sides of the 85/15 split"),
        AssetCheckSpec("negatives_valid", asset="training_pairs", blocking=True,
                       description="7 negatives per query, positive never among them, type-hard "
                       "negatives lack a required type, identifier-hard negatives do not name "
                       "every identifier of their query, kappa matches the unit types"),
    ],
    description="Training queries generated from functional units and their table rows, "
    "diagnostics and steps, with T_q, positive unit, split and 7 mixed negatives.",
)
def training_pairs(
    context: AssetExecutionContext,
    unit_hyperedges: pl.DataFrame,
    unit_nodes: pl.DataFrame,
    unit_embeddings: pl.DataFrame,
    settings: PipelineSettings,
    llm: LLMResource,
) -> Iterator:
    from edaqa_pipeline.training.pipeline import make_training_pairs, unit_identifier_sets

    cfg = settings.settings()
    client = llm.get_client()
    pairs = make_training_pairs(unit_hyperedges, unit_nodes, unit_embeddings, client=client,
                                base_path=cfg.encoder_path)
    train = pairs.filter(pl.col("split") == "train")
    forms = pairs.group_by("form").len().sort("len", descending=True)
    kinds = pairs["negative_kinds"].explode().value_counts().sort("negative_kinds") if pairs.height else None
    yield Output(pairs, metadata={
        "dagster/row_count": pairs.height,
        "queries_train": train.height,
        "queries_val": pairs.height - train.height,
        "units_with_queries": pairs["unit_id"].n_unique(),
        "source": ", ".join(sorted(set(pairs["source"].to_list()))) or "none",
        "llm_provider": client.provider,
        "content_hash": content_hash(pairs),
        "forms": MetadataValue.md("\n".join(f"- {f}: {n}" for f, n in forms.iter_rows())),
        "negative_kinds": ", ".join(f"{k}={n}" for k, n in kinds.iter_rows()) if kinds is not None else "none",
    })
    yield problems_result("training_pairs", "split_disjoint_by_unit", split_problems(pairs))
    identifiers = unit_identifier_sets(unit_hyperedges, unit_nodes)
    yield problems_result("training_pairs", "negatives_valid",
                          sampler_problems(pairs, unit_hyperedges, identifiers=identifiers))


class TrainEncoderConfig(Config):
    """Run config of ``trained_encoder``. The default preset is the paper's size (1,250 pairs,
    10 epochs) with query-side gradients and a per-epoch unit bank (minutes on 2 CPU cores);
    ``preset='paper'`` adds gradients through every candidate unit (hours on 2 CPU cores)."""

    preset: str = Field(default="default", description="default | paper")
    max_pairs: int = Field(default=-1, description="pairs used (train + val); -1 = preset's, 0 = all")
    epochs: int = Field(default=-1, description="maximum epochs; -1 = preset's")
    patience: int = Field(default=-1, description="early-stopping patience; -1 = preset's")
    unit_grad: str = Field(default="", description="none | all ('' = preset's)")
    max_seconds: float = Field(default=-1.0, description="time guard in seconds; -1 = preset's")
    force: bool = Field(default=False, description="retrain even if this version exists")
    overrides_json: str = Field(default="", description='any TrainConfig field as JSON, e.g. {"lr": 2e-4}')

    def train_config(self) -> TrainConfig:
        import json

        base = TrainConfig.paper() if self.preset == "paper" else TrainConfig()
        data = base.to_dict()
        if self.overrides_json:
            data.update(json.loads(self.overrides_json))
        for key in ("max_pairs", "epochs", "patience", "max_seconds"):
            value = getattr(self, key)
            if value >= 0:
                data[key] = value
        if self.unit_grad:
            data["unit_grad"] = self.unit_grad
        return TrainConfig.from_dict(data)


@asset(
    code_version="1",
    group_name=GROUP,
    kinds={"python", "pytorch", "parquet"},
    check_specs=[
        AssetCheckSpec("adapter_reloads_identically", asset="trained_encoder", blocking=True,
                       description="the saved adapter, loaded in a fresh model, reproduces the "
                       "probe embeddings recorded at training time (max |diff| <= 1e-6)"),
    ],
    description="LoRA adapter of the function-aware encoder (InfoNCE + type-coverage margin), "
    "versioned by training-data hash; not retrained when the data is unchanged.",
)
def trained_encoder(
    context: AssetExecutionContext,
    config: TrainEncoderConfig,
    training_pairs: pl.DataFrame,
    unit_hyperedges: pl.DataFrame,
    settings: PipelineSettings,
) -> Iterator:
    from edaqa_pipeline.training.pipeline import (
        card_frame,
        ensure_trained,
        loss_plot_png,
        reload_problems,
    )

    cfg = settings.settings()
    storage = cfg.storage_root
    train_cfg = config.train_config()
    card, folder, reused = ensure_trained(storage, training_pairs, unit_hyperedges, train_cfg,
                                          base_path=cfg.encoder_path, force=config.force,
                                          log=context.log.info)
    relative = folder.relative_to(storage).as_posix()
    frame = card_frame(card, relative)
    curve = "\n".join(
        ["| epoch | train loss | val loss |", "|---:|---:|---:|"]
        + [f"| {i} | {t:.4f} | {v:.4f} |" for i, (t, v) in enumerate(zip(card["train_loss"], card["val_loss"], strict=False))]
    )
    yield Output(frame, metadata={
        "dagster/row_count": 1,
        "version": card["version"],
        "adapter_path": relative,
        "data_hash": card["data_hash"],
        "reused_existing": reused,
        "epochs_run": card["epochs_run"],
        "best_epoch": card["best_epoch"],
        "best_val_loss": float(card["best_val_loss"]),
        "stopped": card["stopped"],
        "train_seconds": float(card["seconds"]),
        "trainable_params": card["trainable_params"],
        "n_train": card["n_train"],
        "n_val": card["n_val"],
        "peak_rss_mb": float(card["peak_rss_mb"]),
        "config": MetadataValue.json(card["config"]),
        "loss_curve": MetadataValue.md(curve),
        "loss_plot": MetadataValue.md(f"![loss curve](data:image/png;base64,{loss_plot_png(card)})"),
    })
    problems, diff = reload_problems(folder, card, cfg.encoder_path)
    yield problems_result("trained_encoder", "adapter_reloads_identically", problems,
                 max_abs_diff=float(diff) if diff == diff else -1.0)


@asset(
    code_version="2",
    group_name=GROUP,
    kinds={"python", "parquet"},
    ins={"chunks": AssetIn(metadata=ALL_PARTITIONS)},
    check_specs=[
        AssetCheckSpec("every_chunk_and_unit_has_a_tuned_vector", asset="tuned_embeddings", blocking=True),
    ],
    description="Chunk and unit-summary vectors from the trained function-aware encoder "
    "(what fa_hybrid_tuned reads); unchanged rows are reused.",
)
def tuned_embeddings(
    context: AssetExecutionContext,
    trained_encoder: pl.DataFrame,
    unit_hyperedges: pl.DataFrame,
    chunks: dict[str, pl.DataFrame],
    settings: PipelineSettings,
    io_manager: ResourceParam[CorpusParquetIOManager],
) -> Iterator:

    from edaqa_pipeline.assets.indexes import vector_problems
    from edaqa_pipeline.assets.units import concat
    from edaqa_pipeline.retrieval.embedder import vectors_of
    from edaqa_pipeline.retrieval.encoders import base_encoder
    from edaqa_pipeline.training.pipeline import tuned_vectors

    cfg = settings.settings()
    row = trained_encoder.row(0, named=True)
    all_chunks = concat(chunks, CHUNKS_SCHEMA)
    previous = io_manager.previous_output("tuned_embeddings")
    frame, stats = tuned_vectors(cfg.storage_root / row["adapter_path"], row["version"], unit_hyperedges,
                                 all_chunks, previous, base_path=cfg.encoder_path)
    yield Output(frame, metadata={"dagster/row_count": frame.height, "encoder_version": row["version"],
                                  **stats})
    problems = []
    n_units = frame.filter(pl.col("kind") == "unit").height
    n_chunks = frame.filter(pl.col("kind") == "chunk").height
    if n_units != unit_hyperedges.height:
        problems.append(f"{n_units} unit vectors for {unit_hyperedges.height} units")
    if n_chunks != all_chunks.height:
        problems.append(f"{n_chunks} chunk vectors for {all_chunks.height} chunks")
    if unit_hyperedges.height and not all_chunks.height:
        problems.append("units but no chunk was read: the instance has no document partitions")
    dim = base_encoder(cfg.encoder_path).dim
    vectors = vectors_of(frame).reshape(-1, dim)
    problems += vector_problems(vectors, dim)
    yield problems_result("tuned_embeddings", "every_chunk_and_unit_has_a_tuned_vector", problems)
