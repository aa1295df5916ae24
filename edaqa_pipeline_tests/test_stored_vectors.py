"""Stored vectors (``Encoder.encode(..., fixed_shape=True)``): a text's vector is the same bytes
whatever else is encoded with it and however the texts are batched, which is what lets an
incremental build re-encode only what changed and still equal a fresh build; long texts go
fewer at a time (``batch_rows``), which bounds the build's peak memory."""

from __future__ import annotations

import numpy as np

from edaqa_pipeline.retrieval.encoders import MAX_BATCH_TOKENS, PAD_BUCKET, Encoder, batch_rows

LONG = [f"Option {i}: " + "the global router adjusts the capacity of every routing layer " * 40
        for i in range(10)]  # ten texts truncated to the model's 256 tokens: one bucket
SHORT = ["What is the default of -sink_clustering_size?", "report_checks -path_delay min_max",
         "Set CORE_UTILIZATION to 40."]


def test_long_buckets_go_fewer_at_a_time() -> None:
    assert batch_rows(PAD_BUCKET, 32) == 32  # short texts keep the caller's batch size
    assert batch_rows(256, 32) == MAX_BATCH_TOKENS // 256 < 32
    assert batch_rows(256, 32) * 256 <= MAX_BATCH_TOKENS
    assert batch_rows(10 * MAX_BATCH_TOKENS, 32) == 1


def test_a_vector_does_not_depend_on_the_other_texts_or_the_batch_size() -> None:
    encoder = Encoder()
    texts = [*LONG, *SHORT]
    together = encoder.encode(texts, fixed_shape=True)  # ten 256-token texts: split into batches
    assert together.shape == (len(texts), encoder.dim) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert len({row.tobytes() for row in together}) == len(texts)  # every text its own vector
    for batch_size in (1, 3, 32):
        again = encoder.encode(list(reversed(texts)), fixed_shape=True, batch_size=batch_size)[::-1]
        assert again.tobytes() == together.tobytes(), batch_size
    alone = np.vstack([encoder.encode([t], fixed_shape=True) for t in (LONG[-1], SHORT[0])])
    assert alone.tobytes() == np.vstack([together[len(LONG) - 1], together[len(LONG)]]).tobytes()
