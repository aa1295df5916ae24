"""The three training steps as plain functions, shared by the Dagster assets and ``edaqa train``.

1. :func:`make_training_pairs`: queries from units (``pairs.build_pairs``) + negatives
   (``sampler.sample_negatives``) -> the ``training_pairs`` table.
2. :func:`ensure_trained`: the adapter for these pairs and this config, stored under
   ``STORAGE/encoders/<version>/`` where ``version`` = training-data hash + config digest. An
   existing folder with a card is reused, never retrained; a new one is trained in a temporary
   folder and renamed into place, so an interrupted run leaves nothing that looks finished.
3. :func:`tuned_vectors`: chunk and unit-summary vectors in the tuned space (the
   ``tuned_embeddings`` table), reusing rows of the previous table whose text and encoder
   version are unchanged, so querying never re-encodes the corpus.

``trained_encoder`` is a one-row table (:func:`card_frame`); ``IndexSnapshot`` reads it to
find the adapter (``adapter_path`` is relative to the storage root, so a copied storage
folder keeps working).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from edaqa_pipeline.graphs.summaries import unit_identifiers
from edaqa_pipeline.retrieval.embedder import Embedder
from edaqa_pipeline.retrieval.encoders import Encoder, base_encoder
from edaqa_pipeline.training.config import (
    CARD_FILE,
    TrainConfig,
    read_card,
    training_data_hash,
    version_of,
)
from edaqa_pipeline.training.pairs import build_pairs
from edaqa_pipeline.training.sampler import RATIOS, sample_negatives
from edaqa_pipeline.training.train import train_encoder

ENCODERS_DIR = "encoders"
PROBE_TEXTS = 4

CARD_SCHEMA: dict[str, pl.DataType] = {
    "version": pl.String(),
    "adapter_path": pl.String(),  # relative to the storage root
    "data_hash": pl.String(),
    "config_json": pl.String(),
    "epochs_run": pl.Int64(),
    "best_epoch": pl.Int64(),
    "best_val_loss": pl.Float64(),
    "train_loss": pl.List(pl.Float64()),
    "val_loss": pl.List(pl.Float64()),
    "seconds": pl.Float64(),
    "trainable_params": pl.Int64(),
    "card_json": pl.String(),
}

TUNED_SCHEMA: dict[str, pl.DataType] = {
    "kind": pl.String(),  # chunk | unit
    "item_id": pl.String(),
    "document": pl.String(),
    "text_hash": pl.String(),
    "encoder_version": pl.String(),
    "encoder_id": pl.String(),
}  # + "vector": the encoder's width


def unit_base_vectors(units: pl.DataFrame, unit_embeddings: pl.DataFrame | None, base_path: str = "") -> np.ndarray:
    """Base-encoder vectors of the unit summaries, row-aligned with ``units`` (from the
    ``unit_embeddings`` table when it covers them, else encoded now)."""
    known: dict[str, Any] = {}
    if unit_embeddings is not None and unit_embeddings.height:
        known = dict(zip(unit_embeddings["unit_id"].to_list(), unit_embeddings["vector"].to_list(), strict=True))
    missing = [i for i, u in enumerate(units["unit_id"].to_list()) if u not in known]
    encoder = base_encoder(base_path)
    vectors = np.zeros((units.height, encoder.dim), dtype=np.float32)
    for i, u in enumerate(units["unit_id"].to_list()):
        if u in known:
            vectors[i] = np.asarray(known[u], dtype=np.float32)
    if missing:
        fresh = encoder.encode([units["summary"][i] for i in missing], stable=True)
        vectors[missing] = fresh
    return vectors


def unit_identifier_sets(units: pl.DataFrame, nodes: pl.DataFrame) -> list[set[str]]:
    """Per unit row: the canonical identifiers its artifacts name, plus its anchor (the
    unit-identifier graph the identifier-hard negatives are drawn from)."""
    node_by_id = {r["node_id"]: r for r in nodes.select("node_id", "artifact_type", "content").iter_rows(named=True)}
    out = []
    for anchor, kind, ids in units.select("anchor", "anchor_kind", "artifact_ids").iter_rows():
        arts = [node_by_id[a] for a in ids if a in node_by_id]
        names = set(unit_identifiers(anchor, kind, arts))
        if kind in ("command", "file"):
            names.add(anchor)
        out.append(names)
    return out


def make_training_pairs(
    units: pl.DataFrame,
    nodes: pl.DataFrame,
    unit_embeddings: pl.DataFrame | None = None,
    *,
    client: Any = None,
    per_unit: int | None = None,
    rows_per_unit: int | None = None,
    ratios: tuple[int, int, int, int] = RATIOS,
    seed: int = 0,
    base_path: str = "",
) -> pl.DataFrame:
    """The ``training_pairs`` table: queries, T_q, positives, split, negatives and kappa.
    ``rows_per_unit`` (row-level queries) and ``ratios`` (negative mix) default to the
    package's choice; ``rows_per_unit=0`` with ``ratios=PAPER_RATIOS`` is the paper's setup."""
    units = units.sort("unit_id")
    kwargs: dict[str, int] = {"per_unit": per_unit} if per_unit else {}
    if rows_per_unit is not None:
        kwargs["rows_per_unit"] = rows_per_unit
    pairs = build_pairs(units, nodes, client=client, **kwargs)
    if pairs.is_empty():
        return pairs.with_columns(
            pl.lit([], dtype=pl.List(pl.String())).alias("negatives"),
            pl.lit([], dtype=pl.List(pl.String())).alias("negative_kinds"),
            pl.lit([], dtype=pl.List(pl.Float64())).alias("kappa"),
        )
    return sample_negatives(pairs, units, unit_base_vectors(units, unit_embeddings, base_path), seed=seed,
                            ratios=ratios, identifiers=unit_identifier_sets(units, nodes))


def adapter_folder(storage: Path, version: str) -> Path:
    return Path(storage) / ENCODERS_DIR / version


def probe_texts(pairs: pl.DataFrame, units: pl.DataFrame) -> list[str]:
    """A fixed handful of texts (queries and a unit summary) to check reloads against."""
    queries = pairs.sort("query_id")["query"].head(PROBE_TEXTS - 1).to_list()
    summaries = units.sort("unit_id")["summary"].head(1).to_list()
    return queries + summaries


def ensure_trained(
    storage: Path,
    pairs: pl.DataFrame,
    units: pl.DataFrame,
    config: TrainConfig | None = None,
    *,
    base_path: str = "",
    force: bool = False,
    log: Callable[[str], None] = print,
) -> tuple[dict[str, Any], Path, bool]:
    """(card, adapter folder, reused). Trains only when no adapter for this data hash and
    config exists (or ``force``)."""
    config = config or TrainConfig()
    data_hash = training_data_hash(pairs, units)
    version = version_of(data_hash, config, base_path)
    folder = adapter_folder(storage, version)
    card = read_card(folder)
    if card is not None and not force and (folder / "adapter_config.json").is_file():
        log(f"adapter {version} exists (training data unchanged): not retrained")
        return card, folder, True
    tmp = folder.with_name(folder.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    result = train_encoder(pairs, units, tmp, config, base_path=base_path,
                           probe_texts=probe_texts(pairs, units), log=log)
    card = result.card
    card["version"] = version
    (tmp / CARD_FILE).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    if folder.exists():
        shutil.rmtree(folder)
    tmp.rename(folder)
    return card, folder, False


def reload_problems(adapter_dir: Path, card: dict[str, Any], base_path: str = "", tol: float = 1e-6) -> tuple[list[str], float]:
    """Reload the adapter in a fresh model and compare its probe vectors with the card's."""
    from sentence_transformers import SentenceTransformer

    from edaqa_pipeline.retrieval.adapters import AdapterNotFoundError, _cached

    probe = card.get("probe")
    if not probe:
        return ["card has no probe vectors"], float("nan")
    try:
        model = _cached.__wrapped__(base_path or "", str(Path(adapter_dir).resolve()))
    except (AdapterNotFoundError, OSError, ValueError) as exc:
        return [f"adapter does not load: {exc}"], float("nan")
    assert isinstance(model, SentenceTransformer)
    got = model.encode(probe["texts"], normalize_embeddings=True, show_progress_bar=False)
    diff = float(np.abs(np.asarray(got) - np.asarray(probe["vectors"], dtype=np.float32)).max())
    return ([] if diff <= tol else [f"reloaded embeddings differ by {diff:.2e} (> {tol})"]), diff


def card_frame(card: dict[str, Any], adapter_path: str) -> pl.DataFrame:
    """The one-row ``trained_encoder`` table."""
    slim = {k: v for k, v in card.items() if k != "probe"}
    row = {
        "version": card["version"],
        "adapter_path": adapter_path,
        "data_hash": card["data_hash"],
        "config_json": json.dumps(card["config"], sort_keys=True),
        "epochs_run": card["epochs_run"],
        "best_epoch": card["best_epoch"],
        "best_val_loss": float(card["best_val_loss"]),
        "train_loss": [float(x) for x in card["train_loss"]],
        "val_loss": [float(x) for x in card["val_loss"]],
        "seconds": float(card["seconds"]),
        "trainable_params": card["trainable_params"],
        "card_json": json.dumps(slim, sort_keys=True),
    }
    return pl.DataFrame([row], schema=CARD_SCHEMA)


def tuned_vectors(
    adapter_dir: Path,
    version: str,
    units: pl.DataFrame,
    chunks: pl.DataFrame,
    previous: pl.DataFrame | None = None,
    *,
    base_path: str = "",
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Chunk (``embed_text``) and unit-summary vectors from the tuned encoder.

    The shared ``Embedder`` reuses rows of ``previous`` with the same kind, id, text hash and
    encoder id (the adapter's weights are part of the id) and encodes the rest in one batch.
    """
    encoder = Encoder(path=base_path, adapter=str(adapter_dir), name="function")
    embedder = Embedder.from_frames(encoder, previous)
    frames = [
        embedder.frame("unit", units["unit_id"].to_list(), units["summary"].to_list(),
                       extra={"document": [",".join(d) for d in units["documents"].to_list()]}),
        embedder.frame("chunk", chunks["chunk_id"].to_list(), chunks["embed_text"].to_list(),
                       extra={"document": chunks["document"].to_list()}),
    ]
    frame = pl.concat(frames, how="vertical_relaxed").with_columns(
        pl.lit(version).alias("encoder_version"))
    frame = frame.select(*TUNED_SCHEMA, "vector").sort("kind", "item_id")
    return frame, {"encoded": embedder.encoded, "reused": embedder.reused}


def loss_plot_png(card: dict[str, Any]) -> str:
    """Base64 PNG of the train / validation loss per epoch (epoch 0 = before training)."""
    import base64
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.2))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    train, val = card["train_loss"], card["val_loss"]
    ax.plot(range(len(train)), train, marker="o", label="train")
    ax.plot(range(len(val)), val, marker="s", label="validation")
    ax.axvline(card["best_epoch"], color="grey", linestyle=":", label=f"best epoch {card['best_epoch']}")
    ax.set_xlabel("epoch (0 = before training)")
    ax.set_ylabel("L_NCE + 0.3 L_type")
    ax.set_title("function-aware encoder training")
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, metadata={"Software": None})
    return base64.b64encode(buf.getvalue()).decode("ascii")
