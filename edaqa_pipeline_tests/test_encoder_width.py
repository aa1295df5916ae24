"""``EDAQA_ENCODER`` end to end: a sentence-transformers model of another width (128) indexes,
answers and evaluates the sample corpus, and an index refuses a query encoder it was not
built with (instead of silently mixing vector spaces)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edaqa_pipeline_tests.fixtures_index import REPO, copy_corpus

pytestmark = pytest.mark.slow


def _narrow_model(folder: Path) -> Path:
    """all-MiniLM-L6-v2 + a fixed random Dense 384 -> 128 projection, saved as a model folder."""
    import torch
    from sentence_transformers import SentenceTransformer, models

    from edaqa_pipeline.settings import default_encoder_path

    base = SentenceTransformer(default_encoder_path(), device="cpu")
    torch.manual_seed(0)
    dense = models.Dense(base.get_embedding_dimension(), 128, bias=False,
                         activation_function=torch.nn.Identity())
    model = SentenceTransformer(modules=[base[0], base[1], dense, models.Normalize()], device="cpu")
    model.save(str(folder))
    return folder


def _edaqa(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "edaqa_pipeline.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)


def test_a_128_wide_encoder_indexes_asks_and_evaluates(tmp_path: Path) -> None:
    model = _narrow_model(tmp_path / "narrow-encoder")
    corpus = copy_corpus(tmp_path / "corpus", ["cts.md", "pdn.md", "placement.md"])
    storage = tmp_path / "storage"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "EDAQA_ENCODER": str(model),
           "EDAQA_LLM_PROVIDER": "offline"}

    built = _edaqa("index", "--corpus", str(corpus), "--storage", str(storage), "--quiet", env=env)
    assert built.returncode == 0, built.stderr[-2000:]
    import polars as pl

    vectors = pl.read_parquet(storage / "tables" / "chunk_embeddings" / "cts.md.parquet")
    assert vectors["vector"].dtype == pl.Array(pl.Float32(), 128)
    units = pl.read_parquet(storage / "tables" / "unit_embeddings.parquet")
    assert units["vector"].dtype == pl.Array(pl.Float32(), 128)

    asked = _edaqa("ask", "How do I enable sink clustering?", "--storage", str(storage),
                   "--method", "dense", "--json", env=env)
    assert asked.returncode == 0, asked.stderr[-2000:]
    record = json.loads(asked.stdout)
    assert record["evidence"] and record["evidence"][0]["doc"] == "cts.md"

    qa = tmp_path / "qa.jsonl"
    qa.write_text(json.dumps({"id": "q1", "question": "What is the default of -starts_with?",
                              "answer": "GROUND", "evidence": [{"doc": "pdn.md"}]}) + "\n")
    evaluated = _edaqa("eval", "--storage", str(storage), "--qa", str(qa), "--methods",
                       "dense,fa_hybrid,edaqa", "--out", str(tmp_path / "eval"), "--no-progress",
                       env=env)
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert set(metrics["methods"]) == {"dense", "fa_hybrid", "edaqa"}

    # The packaged 384-wide encoder is not the index's: a clear error, not a silent mix.
    env_default = {k: v for k, v in env.items() if k != "EDAQA_ENCODER"}
    refused = _edaqa("ask", "sink clustering", "--storage", str(storage), "--method", "dense",
                     env=env_default)
    assert refused.returncode == 2 and "indexed with encoder" in refused.stderr
    assert "Traceback" not in refused.stderr
