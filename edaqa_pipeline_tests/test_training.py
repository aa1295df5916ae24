"""Function-aware encoder training: the loss on hand-computed tensors, training pairs, the
mixed sampler, and a tiny CPU training run on the sample corpus (loss decreases, the saved
adapter reloads to identical embeddings, fa_hybrid_tuned runs)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from edaqa_pipeline.storage.tables import read_table
from edaqa_pipeline.text.sentences import split_sentences
from edaqa_pipeline.training.loss import contrastive_loss, coverage, info_nce, type_margin
from edaqa_pipeline.training.pair_schema import TASK
from edaqa_pipeline.training.pairs import build_pairs, split_problems
from edaqa_pipeline.training.query_task import TrainingQueries
from edaqa_pipeline.training.sampler import KINDS, N_NEGATIVES, sample_negatives, sampler_problems
from edaqa_pipeline.training.templates import copies_unit_text, template_queries
from edaqa_pipeline.training.unit_facts import unit_facts

# --------------------------------------------------------------------------------------------
# Loss (equations 3 and 4), exact values worked out by hand


def test_coverage_kappa() -> None:
    assert coverage(["table", "codeblock"], ["table", "text"]) == 0.5  # |{table}| / 2
    assert coverage(["table"], ["codeblock"]) == 0.0
    assert coverage(["table"], ["table", "codeblock"]) == 1.0
    assert coverage([], ["text"]) == 1.0  # T_q empty -> 1 by definition
    assert coverage([], []) == 1.0


def test_info_nce_hand_computed() -> None:
    # tau = 0.07, sims [0.07, 0, 0] -> logits s/tau = [1, 0, 0]
    # L = -log(e^1 / (e^1 + e^0 + e^0)) = log(1 + 2/e) = log(1.7357588823) = 0.5514447140
    loss = info_nce(torch.tensor([[0.07, 0.0, 0.0]], dtype=torch.float64), tau=0.07)
    assert loss.item() == pytest.approx(math.log(1 + 2 / math.e), abs=1e-9)
    assert loss.item() == pytest.approx(0.5514447140, abs=1e-9)
    # All equal: L = log(3) = 1.0986122887 whatever tau.
    loss = info_nce(torch.zeros(1, 3, dtype=torch.float64))
    assert loss.item() == pytest.approx(1.0986122887, abs=1e-9)


def test_type_margin_hand_computed() -> None:
    # tau = 0.1, sims [0.5, 0.6, 0.2, 0.5] -> s = [5, 6, 2, 5]; kappa = [1, 0.5, 0, 1]; m = 0.1
    # pairs i<j with |dk| > 0.01 (R_q, 5 pairs; (0,3) has dk = 0 and is left out):
    #   (0,1): dk=+0.5, ds=-1 -> max(0, 0.1 - (+1)(-1)) = 1.1
    #   (0,2): dk=+1.0, ds=+3 -> max(0, 0.1 - 3)        = 0
    #   (1,2): dk=+0.5, ds=+4 -> max(0, 0.1 - 4)        = 0
    #   (1,3): dk=-0.5, ds=+1 -> max(0, 0.1 - (-1)(+1)) = 1.1
    #   (2,3): dk=-1.0, ds=-3 -> max(0, 0.1 - (-1)(-3)) = 0
    # L_type = (1.1 + 1.1) / 5 = 0.44
    sims = torch.tensor([[0.5, 0.6, 0.2, 0.5]], dtype=torch.float64)
    kappa = torch.tensor([[1.0, 0.5, 0.0, 1.0]], dtype=torch.float64)
    assert type_margin(sims, kappa, tau=0.1, margin=0.1).item() == pytest.approx(0.44, abs=1e-12)


def test_type_margin_empty_pairs_is_zero() -> None:
    # Every candidate covers T_q (or T_q is empty): R_q is empty -> L_type = 0.
    sims = torch.tensor([[0.9, 0.1, 0.5]], dtype=torch.float64)
    assert type_margin(sims, torch.ones(1, 3, dtype=torch.float64)).item() == 0.0
    # |dk| = 0.005 <= 0.01: still no pair.
    kappa = torch.tensor([[1.0, 0.995, 1.0]], dtype=torch.float64)
    assert type_margin(sims, kappa).item() == 0.0


def test_contrastive_loss_combines_with_lambda() -> None:
    # Query 1: the example above. L_NCE = -log(e^5 / (e^5 + e^6 + e^2 + e^5))
    #        = log(2 + e + e^-3) = log(4.7680688962) = 1.5619...; L = L_NCE + 0.3 * 0.44.
    # Query 2: all kappa 1 -> L_type = 0; sims all 0 -> L_NCE = log 4; L = log 4.
    sims = torch.tensor([[0.5, 0.6, 0.2, 0.5], [0.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    kappa = torch.tensor([[1.0, 0.5, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    total, parts = contrastive_loss(sims, kappa, tau=0.1, lam=0.3, margin=0.1)
    q1 = math.log(2 + math.e + math.exp(-3)) + 0.3 * 0.44
    q2 = math.log(4)
    assert total.item() == pytest.approx((q1 + q2) / 2, abs=1e-9)
    assert parts["type"].item() == pytest.approx(0.22, abs=1e-12)  # (0.44 + 0) / 2


def test_loss_gradient_prefers_covering_unit() -> None:
    # The type term pushes a full-coverage candidate above a partial one that scores higher.
    sims = torch.tensor([[0.50, 0.52]], dtype=torch.float64, requires_grad=True)
    kappa = torch.tensor([[1.0, 0.5]], dtype=torch.float64)
    type_margin(sims, kappa).sum().backward()
    assert sims.grad[0, 0] < 0 < sims.grad[0, 1]


# --------------------------------------------------------------------------------------------
# Pairs and sampler on the sample corpus


@pytest.fixture(scope="module")
def unit_tables(sample_index):  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    tables = storage / "tables"
    units = read_table(tables, "unit_hyperedges")
    nodes = read_table(tables, "unit_nodes")
    embeddings = read_table(tables, "unit_embeddings")
    assert units is not None and nodes is not None and embeddings is not None and units.height > 20
    return units.sort("unit_id"), nodes, embeddings


@pytest.fixture(scope="module")
def pairs_with_negatives(unit_tables):  # type: ignore[no-untyped-def]
    from edaqa_pipeline.training.pipeline import make_training_pairs

    units, nodes, embeddings = unit_tables
    return make_training_pairs(units, nodes, embeddings)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def test_pairs_record_required_types_and_never_copy_a_sentence(unit_tables) -> None:  # type: ignore[no-untyped-def]
    units, nodes, _ = unit_tables
    pairs = build_pairs(units, nodes)
    assert pairs.height >= units.height  # several forms per unit on average
    assert pairs["query_id"].n_unique() == pairs.height
    assert (pairs.group_by("unit_id").len()["len"] >= 2).sum() > units.height // 3
    # T_q recorded, non-empty, and a subset of the positive unit's types (by construction).
    for req, have in pairs.select("required_types", "unit_types").iter_rows():
        assert req and set(req) <= set(have)
    # No query reproduces a sentence of its unit (independent re-check over the node texts).
    content = {r["node_id"]: r["content"] for r in nodes.iter_rows(named=True)}
    artifacts = dict(zip(units["unit_id"].to_list(), units["artifact_ids"].to_list(), strict=True))
    for query, unit_id in pairs.select("query", "unit_id").iter_rows():
        sentences = {_norm(s) for a in artifacts[unit_id] for s in split_sentences(content[a])}
        assert _norm(query) not in sentences
    assert set(pairs["source"].to_list()) == {"template"}
    assert build_pairs(units, nodes).equals(pairs)  # deterministic


def test_pairs_split_is_disjoint_by_unit(unit_tables) -> None:  # type: ignore[no-untyped-def]
    units, nodes, _ = unit_tables
    pairs = build_pairs(units, nodes)
    assert split_problems(pairs) == []
    sides = pairs.group_by("unit_id").agg(pl.col("split").n_unique().alias("n"))
    assert sides["n"].max() == 1
    assert set(pairs["split"].to_list()) == {"train", "val"}
    frac = pairs.filter(pl.col("split") == "train").height / pairs.height
    assert 0.6 < frac < 0.98  # 85/15 by hash of the unit group; small corpus, loose bounds


def test_copy_guard_and_offline_llm_task(unit_tables) -> None:  # type: ignore[no-untyped-def]
    from edaqa_pipeline.llm import OfflineClient
    from edaqa_pipeline.training.query_task import task_inputs

    assert copies_unit_text("The command places pins.", ["The command places pins."])
    assert copies_unit_text("command places pins on the die", ["First, the command places pins on the die boundary."])
    assert not copies_unit_text("What does the `place_pins` command do?", ["The command places pins."])
    units, nodes, _ = unit_tables
    node_by_id = {r["node_id"]: r for r in nodes.iter_rows(named=True)}
    unit = units.filter(pl.col("anchor_kind") == "command").row(0, named=True)
    arts = [node_by_id[a] for a in unit["artifact_ids"]]
    # The LLM task's offline implementation is the template generator.
    result = OfflineClient().complete_structured(TASK, task_inputs(unit, arts, 4), TrainingQueries)
    # (unit-level forms only: row-level queries are templates on the LLM path too)
    assert [q.model_dump() for q in result.queries] == template_queries(unit_facts(unit, arts), 4, rows=0)


def test_sampler_mixed_negatives(unit_tables, pairs_with_negatives) -> None:  # type: ignore[no-untyped-def]
    from edaqa_pipeline.training.hard_negatives import query_names
    from edaqa_pipeline.training.pipeline import unit_identifier_sets

    units, nodes, _ = unit_tables
    pairs = pairs_with_negatives
    identifiers = unit_identifier_sets(units, nodes)
    assert sampler_problems(pairs, units, identifiers=identifiers) == []
    # Identifier-hard negatives never name every identifier their query names; for queries
    # about an option of a command, some share the command or the option (the graph).
    names = dict(zip(units["unit_id"].to_list(), identifiers, strict=True))
    anchors = dict(zip(units["unit_id"].to_list(), units["anchor"].to_list(), strict=True))
    shared = 0
    for row in pairs.iter_rows(named=True):
        commands, options, other = query_names(row["query"], anchors[row["unit_id"]])
        for neg, kind in zip(row["negatives"], row["negative_kinds"], strict=True):
            if kind != "identifier":
                continue
            assert not (commands | options | other) or not (commands | options | other) <= names[neg]
            shared += bool(options and (commands | options) & names[neg])
    assert shared > 0
    types = dict(zip(units["unit_id"].to_list(), [set(t) for t in units["artifact_types"].to_list()], strict=True))
    kinds_seen: set[str] = set()
    for row in pairs.iter_rows(named=True):
        assert len(row["negatives"]) == N_NEGATIVES == 7
        assert len(set(row["negatives"])) == 7 and row["unit_id"] not in row["negatives"]
        assert row["kappa"][0] == 1.0
        for neg, kind in zip(row["negatives"], row["negative_kinds"], strict=True):
            kinds_seen.add(kind)
            if kind == "type_hard":  # lacks at least one required type
                assert not set(row["required_types"]) <= types[neg]
    assert kinds_seen == set(KINDS)
    # Deterministic: same seed, same sample; another seed, another sample.
    base = pairs.drop("negatives", "negative_kinds", "kappa")
    emb = dict(zip(unit_tables[2]["unit_id"].to_list(), unit_tables[2]["vector"].to_list(), strict=True))
    vectors = np.asarray([emb[u] for u in units["unit_id"].to_list()], dtype=np.float32)
    assert sample_negatives(base, units, vectors, identifiers=identifiers).equals(pairs)
    assert not sample_negatives(base, units, vectors, seed=1, identifiers=identifiers)["negatives"].equals(pairs["negatives"])


# --------------------------------------------------------------------------------------------
# Tiny training run


TINY = {"max_pairs": 24, "epochs": 3, "patience": 3, "batch_size": 8, "lr": 2e-3,
        "unit_max_tokens": 64, "unit_grad": "none"}


def _materialize_training(storage: Path, documents: list[str]):  # type: ignore[no-untyped-def]
    """The three training assets through Dagster (ephemeral instance), upstream tables read
    from ``storage`` by the Parquet IO manager."""
    from dagster import AssetSelection, DagsterInstance, load_assets_from_modules, materialize

    from edaqa_pipeline.assets import documents as document_assets
    from edaqa_pipeline.assets import indexes, training, units
    from edaqa_pipeline.assets.io_manager import CorpusParquetIOManager
    from edaqa_pipeline.assets.partitions import DOCUMENTS
    from edaqa_pipeline.resources import LLMResource, PipelineSettings

    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(DOCUMENTS, documents)
    return materialize(
        load_assets_from_modules([document_assets, units, indexes, training]),
        selection=AssetSelection.groups(training.GROUP),
        instance=instance,
        resources={
            "settings": PipelineSettings(storage_root=str(storage), lancedb_uri=str(storage / "lancedb")),
            "llm": LLMResource(provider="offline", cache_dir=str(storage / "llm_cache")),
            "io_manager": CorpusParquetIOManager(base_dir=str(storage / "tables")),
        },
        run_config={"ops": {"trained_encoder": {"config": {"overrides_json": json.dumps(TINY)}}}},
    )


def test_tiny_training_run_loss_decreases_and_adapter_reloads(sample_index, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    from edaqa_pipeline.cli.train import train_storage
    from edaqa_pipeline.registry import MethodNotBuiltError, make_retriever
    from edaqa_pipeline.retrieval.adapters import load_with_adapter
    from edaqa_pipeline.retrieval.snapshot import (
        IndexSnapshot,
        indexed_documents,
    )
    from edaqa_pipeline.training.pipeline import reload_problems

    _, storage_src, _ = sample_index
    storage = tmp_path / "storage"
    shutil.copytree(storage_src, storage, ignore=shutil.ignore_patterns("dagster_home"))
    snapshot = IndexSnapshot.load(storage)
    with pytest.raises(MethodNotBuiltError, match="--with train"):
        make_retriever("fa_hybrid_tuned", snapshot)

    # Dagster: pairs -> trained adapter -> tuned vectors, every asset check passing.
    result = _materialize_training(storage, indexed_documents(storage))
    assert result.success
    checks = {(c.asset_key.path[-1], c.check_name): c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {("training_pairs", "split_disjoint_by_unit"): True,
                      ("training_pairs", "negatives_valid"): True,
                      ("trained_encoder", "adapter_reloads_identically"): True,
                      ("tuned_embeddings", "every_chunk_and_unit_has_a_tuned_vector"): True}
    meta = result.asset_materializations_for_node("trained_encoder")[0].metadata
    assert meta["reused_existing"].value is False and "data:image/png;base64," in meta["loss_plot"].value
    card_row = read_table(storage / "tables", "trained_encoder").row(0, named=True)  # type: ignore[union-attr]
    adapter = storage / card_row["adapter_path"]
    assert adapter.parent == storage / "encoders" and adapter.name.startswith(card_row["data_hash"][:16])
    card = json.loads((adapter / "card.json").read_text())
    assert card["steps"] > 0 and card["trainable_params"] == 73_728 and card["epochs_run"] == 3
    assert len(card["val_loss"]) == card["epochs_run"] + 1 and 0 <= card["best_epoch"] <= 3
    # Exact eval-mode loss on the training pairs: lower after training than before.
    assert min(card["train_eval_loss"][1:]) < card["train_eval_loss"][0]

    # The saved adapter reloads (fresh model) to the in-memory model's embeddings.
    problems, diff = reload_problems(adapter, card)
    assert problems == [] and diff <= 1e-6
    reloaded = load_with_adapter("", str(adapter))
    vectors = reloaded.encode(card["probe"]["texts"], normalize_embeddings=True, show_progress_bar=False)
    np.testing.assert_allclose(vectors, np.asarray(card["probe"]["vectors"]), atol=1e-6)
    base = IndexSnapshot.load(storage).base.encode(card["probe"]["texts"])
    assert np.abs(vectors - base).max() > 1e-4  # the adapter is not a no-op

    # `edaqa train` (the train_encoder job on the storage's own instance), same data and
    # config: the existing adapter is reused, not retrained.
    again = train_storage(storage, overrides=TINY)
    assert again["reused"] and Path(again["adapter_dir"]) == adapter and again["run_id"]

    # fa_hybrid_tuned reads the stored tuned vectors (nothing re-encoded) and answers.
    snapshot = IndexSnapshot.load(storage)
    retriever = make_retriever("fa_hybrid_tuned", snapshot)
    view = retriever.snapshot  # type: ignore[attr-defined]
    assert not view.function.is_base and snapshot.tuned is not None and snapshot.tuned.encoded_now == 0
    tuned = read_table(storage / "tables", "tuned_embeddings")
    assert tuned is not None and tuned.height == snapshot.units.height + snapshot.chunks.height
    evidence = retriever.retrieve("How do I run global routing?", 5)
    assert evidence and all(e.doc for e in evidence)


def test_full_gradient_mode_runs(unit_tables, pairs_with_negatives, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``unit_grad='all'`` (the paper's literal objective: gradient through every candidate)
    trains and saves too; a couple of steps with short summaries keep it cheap."""
    from edaqa_pipeline.training.config import TrainConfig, read_card
    from edaqa_pipeline.training.train import train_encoder

    units, _, _ = unit_tables
    config = TrainConfig(max_pairs=10, epochs=1, batch_size=4, unit_max_tokens=32, unit_grad="all")
    result = train_encoder(pairs_with_negatives, units, tmp_path / "adapter", config, log=lambda *_: None)
    assert result.card["steps"] >= 2 and (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert read_card(tmp_path / "adapter")["config"]["unit_grad"] == "all"
    with pytest.raises(ValueError, match="unit_grad"):
        train_encoder(pairs_with_negatives, units, tmp_path / "x", TrainConfig(unit_grad="positive"))
