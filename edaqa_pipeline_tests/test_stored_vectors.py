"""Stored vectors (``Encoder.encode(..., stable=True)``): a text's vector is the same bytes
whatever else is encoded with it, in whatever order and under whatever thread count, which is
what lets an incremental build re-encode only what changed and still equal a fresh build.

A CI machine once gave a 32-token text different bytes alone than in a batch of three (the
BLAS kernel depends on the batch's size): every text is now encoded alone, on ONNX Runtime
(``OnnxEncoder.encode_each``) or, without it, on PyTorch (``_encode_stable``); both are checked
here against a pass over the text alone, not only against themselves."""

from __future__ import annotations

import numpy as np
import torch

from edaqa_pipeline.retrieval.encoders import Encoder, _encode_stable

LONG = [f"Option {i}: " + "the global router adjusts the capacity of every routing layer " * 40
        for i in range(10)]  # ten texts truncated to the model's 256 tokens
SHORT = ["What is the default of -sink_clustering_size?", "report_checks -path_delay min_max",
         "Set CORE_UTILIZATION to 40."]
TEXTS = [*LONG, *SHORT]


def _torch_alone(text: str) -> np.ndarray:
    """sentence-transformers' own encode of the text alone, on one thread."""
    model = Encoder().model()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return model.encode([text], batch_size=1, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False).astype(np.float32)
    finally:
        torch.set_num_threads(threads)


def test_stored_vectors_come_from_onnx_runtime_and_depend_on_the_text_alone() -> None:
    encoder = Encoder()
    fast = encoder.onnx_model()
    assert fast is not None  # the backend every build uses when ONNX Runtime works
    together = encoder.encode(TEXTS, stable=True)
    assert together.shape == (len(TEXTS), encoder.dim) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert len({row.tobytes() for row in together}) == len(TEXTS)  # every text its own vector
    assert encoder.encode(TEXTS[::-1], stable=True)[::-1].tobytes() == together.tobytes()
    for workers in (1, 3):
        assert fast.encode_each(TEXTS[::2], workers=workers).tobytes() == together[::2].tobytes()
    for i in (len(LONG) - 1, len(LONG), len(TEXTS) - 1):  # a long text and two short ones, alone
        assert encoder.encode([TEXTS[i]], stable=True).tobytes() == together[i].tobytes()
        assert fast.encode([TEXTS[i]]).tobytes() == together[i].tobytes()  # the query path, one text
        assert float(np.abs(_torch_alone(TEXTS[i]) - together[i]).max()) < 1e-5  # the same model


def test_the_pytorch_path_depends_on_the_text_alone_too() -> None:
    model = Encoder().model()
    together = _encode_stable(model, TEXTS)
    assert _encode_stable(model, TEXTS[::-1])[::-1].tobytes() == together.tobytes()
    threads = torch.get_num_threads()
    try:
        for count in (1, 3):  # the caller's thread count reaches neither the bytes nor the setting
            torch.set_num_threads(count)
            assert _encode_stable(model, TEXTS[::2]).tobytes() == together[::2].tobytes(), count
            assert torch.get_num_threads() == count
    finally:
        torch.set_num_threads(threads)
    for i in (len(LONG) - 1, len(LONG), len(TEXTS) - 1):
        assert _torch_alone(TEXTS[i]).tobytes() == together[i].tobytes()
