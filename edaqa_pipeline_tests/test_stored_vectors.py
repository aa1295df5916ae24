"""Stored vectors (``Encoder.encode(..., stable=True)``): a text's vector is the same bytes
whatever else is encoded with it, in whatever order and under whatever thread count, which is
what lets an incremental build re-encode only what changed and still equal a fresh build.

A CI machine once gave a 32-token text different bytes alone than in a batch of three (the
BLAS kernel depends on the batch's size): every text is now encoded alone, and this test
compares against the model's own forward pass of the text alone, not only against itself."""

from __future__ import annotations

import numpy as np
import torch

from edaqa_pipeline.retrieval.encoders import Encoder

LONG = [f"Option {i}: " + "the global router adjusts the capacity of every routing layer " * 40
        for i in range(10)]  # ten texts truncated to the model's 256 tokens
SHORT = ["What is the default of -sink_clustering_size?", "report_checks -path_delay min_max",
         "Set CORE_UTILIZATION to 40."]


def _reference(text: str) -> np.ndarray:
    """sentence-transformers' own encode of the text alone, on one thread."""
    model = Encoder().model()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return model.encode([text], batch_size=1, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False).astype(np.float32)
    finally:
        torch.set_num_threads(threads)


def test_a_vector_does_not_depend_on_the_other_texts_their_order_or_the_threads() -> None:
    encoder = Encoder()
    texts = [*LONG, *SHORT]
    together = encoder.encode(texts, stable=True)
    assert together.shape == (len(texts), encoder.dim) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert len({row.tobytes() for row in together}) == len(texts)  # every text its own vector
    again = encoder.encode(list(reversed(texts)), stable=True)[::-1]
    assert again.tobytes() == together.tobytes()
    threads = torch.get_num_threads()
    try:
        for count in (1, 3):  # the caller's thread count reaches neither the bytes nor the setting
            torch.set_num_threads(count)
            assert encoder.encode(texts[::2], stable=True).tobytes() == together[::2].tobytes(), count
            assert torch.get_num_threads() == count
    finally:
        torch.set_num_threads(threads)
    for i in (len(LONG) - 1, len(LONG), len(texts) - 1):  # a long text and two short ones, alone
        assert encoder.encode([texts[i]], stable=True).tobytes() == together[i].tobytes()
        assert _reference(texts[i]).tobytes() == together[i].tobytes()
