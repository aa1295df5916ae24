"""Query encoding on ONNX Runtime (``retrieval.onnx_encoder``): the exported model computes what
the PyTorch model does, is exported once per model into its cache, repairs a damaged cache
file, and can be switched off."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

from edaqa_pipeline.retrieval import onnx_encoder
from edaqa_pipeline.retrieval.encoders import Encoder, _load

QUERIES = ["What is the default of -sink_clustering_size?",
           "How do I enable sink clustering in CTS?",
           "Which command sets the global routing layers " + "and adjusts their capacity " * 30]


@pytest.fixture()
def cache(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv(onnx_encoder.CACHE_ENV, str(tmp_path / "onnx"))
    monkeypatch.delenv(onnx_encoder.BACKEND_ENV, raising=False)
    return tmp_path / "onnx"


def test_onnx_vectors_equal_the_pytorch_model_and_repeat_exactly(cache) -> None:  # type: ignore[no-untyped-def]
    model = _load("")
    fast = onnx_encoder.load(model, "base-test")
    assert fast is not None and fast.path == onnx_encoder.cache_path("base-test") and fast.path.is_file()
    assert fast.path.parent == cache and fast.path.name.startswith("base-test-")  # + versions
    reference = model.encode(QUERIES, normalize_embeddings=True)
    got = fast.encode(QUERIES)
    assert got.dtype == np.float32 and got.shape == reference.shape
    assert float(np.abs(got - reference).max()) < 1e-5  # the long one is truncated the same way
    for query in QUERIES:  # one at a time, as queries arrive: the same bytes every time
        assert fast.encode([query]).tobytes() == fast.encode([query]).tobytes()


def test_the_export_is_cached_and_a_damaged_file_is_exported_again(cache) -> None:  # type: ignore[no-untyped-def]
    model = _load("")
    first = onnx_encoder.load(model, "cached")
    assert first is not None
    stamp = first.path.stat().st_mtime_ns
    again = onnx_encoder.load(model, "cached")
    assert again is not None and again.path.stat().st_mtime_ns == stamp  # not exported twice
    first.path.write_bytes(b"not an onnx model")
    repaired = onnx_encoder.load(model, "cached")
    assert repaired is not None and repaired.path.stat().st_size > 1_000_000
    assert float(np.abs(repaired.encode(QUERIES[:1]) - first.encode(QUERIES[:1])).max()) == 0.0


def test_backend_torch_turns_it_off_and_failures_fall_back_with_a_warning(cache, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(onnx_encoder.BACKEND_ENV, "torch")
    assert onnx_encoder.load(_load(""), "off") is None and not onnx_encoder.cache_path("off").exists()
    monkeypatch.delenv(onnx_encoder.BACKEND_ENV)

    class NotAModel:  # what a model that cannot be exported looks like to load()
        tokenizer = None

    with caplog.at_level(logging.WARNING, logger=onnx_encoder.__name__):
        assert onnx_encoder.load(NotAModel(), "broken") is None
    assert "using PyTorch" in caplog.text and "broken" in caplog.text


def test_an_export_that_disagrees_with_pytorch_is_not_used(cache, caplog) -> None:  # type: ignore[no-untyped-def]
    model = _load("")
    good = onnx_encoder.load(model, "base")
    assert good is not None
    data = bytearray(good.path.read_bytes())  # damage the weights: flip bytes mid-file
    middle = len(data) // 2
    data[middle:middle + 4096] = bytes(b ^ 0x55 for b in data[middle:middle + 4096])
    good.path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger=onnx_encoder.__name__):
        reloaded = onnx_encoder.load(model, "base")
    # either the damaged file failed to load and was exported again, or it loaded and the probe
    # comparison refused it: what is returned always agrees with PyTorch
    if reloaded is not None:
        probe = reloaded.encode(QUERIES[:1])
        assert float(np.abs(probe - model.encode(QUERIES[:1], normalize_embeddings=True)).max()) < 1e-5
    else:
        assert "differs from PyTorch" in caplog.text


def test_encoder_queries_use_onnx_and_stored_vectors_stay_on_pytorch() -> None:
    encoder = Encoder()
    model = _load("")
    assert encoder.onnx_model() is not None  # the ONNX path is what this test measures
    query = encoder.encode(QUERIES[:1])
    assert float(np.abs(query - model.encode(QUERIES[:1], normalize_embeddings=True)).max()) < 1e-5
    stored = encoder.encode(QUERIES[:1], stable=True)  # the PyTorch path, the text alone
    assert float(np.abs(stored - query).max()) < 1e-5
    many = [f"chunk text number {i}" for i in range(20)]  # a corpus-sized list: PyTorch batches
    assert float(np.abs(encoder.encode(many) - model.encode(many, normalize_embeddings=True)).max()) < 1e-5


def test_a_validated_export_answers_in_a_new_process_without_torch(cache) -> None:  # type: ignore[no-untyped-def]
    """What `edaqa ask` relies on: the sidecar of a validated export is enough to encode
    queries (torch and sentence-transformers are never imported); a sidecar made from other
    model files, or whose stored PyTorch vectors the session does not reproduce, is not used."""
    model = _load("")
    assert onnx_encoder.load(model, "fresh", "files-1") is not None
    assert onnx_encoder.sidecar_path("fresh").is_file()
    script = ("import json, sys\nfrom edaqa_pipeline.retrieval import onnx_encoder\n"
              "fast = onnx_encoder.load_cached('fresh', 'files-1')\n"
              f"vectors = fast.encode({QUERIES!r})\n"
              "print(json.dumps({'loaded': sorted(m for m in ('torch', 'transformers', "
              "'sentence_transformers') if m in sys.modules), 'dim': fast.dim, "
              "'width': onnx_encoder.cached_dim('fresh', 'files-1'), 'vectors': vectors.tolist()}))")
    out = subprocess.run([sys.executable, "-c", script], env=dict(os.environ), capture_output=True,
                         text=True, check=True)
    record = json.loads(out.stdout.strip().splitlines()[-1])
    assert record["loaded"] == []
    assert record["dim"] == record["width"] == model.get_embedding_dimension()
    reference = model.encode(QUERIES, normalize_embeddings=True)
    assert float(np.abs(np.asarray(record["vectors"]) - reference).max()) < 1e-5  # the long one too

    assert onnx_encoder.load_cached("fresh", "files-2") is None  # the model's files changed
    assert onnx_encoder.cached_dim("fresh", "files-2") is None
    sidecar = onnx_encoder.sidecar_path("fresh")
    stored = json.loads(sidecar.read_text())
    stored["reference"][0][0] += 0.01  # vectors this session does not produce
    sidecar.write_text(json.dumps(stored))
    assert onnx_encoder.load_cached("fresh", "files-1") is None
    assert onnx_encoder.load(model, "fresh", "files-1") is not None  # validated against PyTorch again
    assert onnx_encoder.load_cached("fresh", "files-1") is not None  # and its sidecar rewritten
