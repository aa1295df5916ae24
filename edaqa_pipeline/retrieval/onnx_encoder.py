"""Encoding on ONNX Runtime: the same sentence-transformers model, exported locally.

Why: PyTorch's per-call overhead is most of the cost of a small forward pass, and both of the
project's encodings are small passes. A question is one short text: 12.4 ms with PyTorch,
4.3 ms with ONNX Runtime (2 cores, quiet, all-MiniLM-L6-v2). A stored vector is one text
encoded alone (``encoders``' docstring: a vector must be a function of its text, so no
batch): 407 chunk-sized texts took 7.1 s on ONNX Runtime against 12.4 s with PyTorch and
13.8 s for sentence-transformers' own batched ``encode`` (the floor a build is measured
against), vectors equal to 1.9e-7. Int8 dynamic quantisation was 1.75x faster on batches but
moved the vectors (mean cosine 0.94 to fp32), so it is not used.

sentence-transformers' own ONNX backend needs ``optimum-onnx``, whose releases (<= 0.1.0)
require transformers < 4.58 while sentence-transformers 6.2 requires >= 5: it cannot be
installed on this stack. The export here is ``torch.onnx.export`` of the loaded model's whole
module pipeline (Transformer, Pooling, any Dense, Normalize), so the exported graph computes
exactly what ``SentenceTransformer.forward`` does; it needs the ``onnx`` package, and runs on
``onnxruntime`` (both pinned in requirements/base.txt).

Each model is exported once per machine into ``EDAQA_ONNX_CACHE`` (default
``~/.cache/edaqa/onnx``; 1.3 s for MiniLM), named by its content-derived ``encoder_id`` (a
trained adapter has its own, about 90 MB each) and a digest of the library versions and this
exporter's version, written to a temporary file and renamed, so concurrent processes never
read half a file. At load the session encodes probe texts and is used only if it agrees with
PyTorch to ``MAX_DIFF``; a damaged file is exported again once. ``EDAQA_ENCODER_BACKEND=torch``
turns it off (every encoding on PyTorch; stored vectors then differ from ONNX Runtime's at
1e-7, so build and re-index under the same setting); any failure falls back to PyTorch with
one warning, never an error.

Beside each export lies ``<name>.json``: the vector width, the graph's inputs, the model's
tokenizer (the ``tokenizers`` definition the export was validated with) and PyTorch's vectors
of the probe texts. A later process loads the session from these alone (:func:`load_cached`)
and validates it against the stored vectors, so answering a question, and re-indexing a
document, never imports torch, transformers or sentence-transformers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edaqa_pipeline.storage.atomic import write_json

LOG = logging.getLogger(__name__)
BACKEND_ENV = "EDAQA_ENCODER_BACKEND"
CACHE_ENV = "EDAQA_ONNX_CACHE"
THREADS_ENV = "EDAQA_ONNX_THREADS"
OPSET = 17
EXPORTER_VERSION = "1"  # bump when _export changes what it writes
MAX_TEXTS = 8  # longer unstable lists are encoded by PyTorch in padded batches
MAX_DIFF = 1e-5  # largest difference to PyTorch at load for the session to be used
PROBES = ("What is the default of -sink_clustering_size?",
          "How do I enable sink clustering in CTS before global routing and detailed routing?",
          "Which command sets the global routing layers and adjusts their capacity? " * 40)  # truncated
_EXPORT_LOCK = threading.Lock()  # torch.onnx.export is not thread-safe


def enabled() -> bool:
    """ONNX Runtime encoding unless ``EDAQA_ENCODER_BACKEND=torch``."""
    return os.environ.get(BACKEND_ENV, "onnx").strip().lower() != "torch"


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "edaqa" / "onnx")


@dataclass
class OnnxEncoder:
    """A session over one exported model; ``encode`` (a question and its sub-queries, padded
    to the longest) and ``encode_each`` (stored vectors, each text alone) return L2-normalised
    float32 rows."""

    session: Any
    tokenizer: Any  # a tokenizers.Tokenizer with the model's truncation and padding
    input_names: tuple[str, ...]
    dim: int
    path: Path
    lock: threading.Lock = field(default_factory=threading.Lock)  # encode_batch from many threads
    _single: Any = field(default=None, repr=False)  # the one-thread session of encode_each

    def encode(self, texts: list[str]) -> np.ndarray:
        with self.lock:
            encodings = self.tokenizer.encode_batch(list(texts))
        vectors = np.asarray(self.session.run(None, self._feeds(encodings))[0], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def encode_each(self, texts: list[str], workers: int) -> np.ndarray:
        """Every text in a run of its own (unpadded) on a one-thread session, the texts spread
        over ``workers`` threads (``session.run`` is thread-safe): a row depends on its text
        alone, not on the other texts, their order or the number of workers. Each worker
        tokenizes its own text: a tokenizer ``Encoding`` keeps tokens, offsets and the
        truncated overflow, and holding all of them at once cost 130 MiB per 3,400 chunks."""
        session = self.single_thread_session()

        def run_one(text: str) -> np.ndarray:
            with self.lock:
                feeds = self._feeds([self.tokenizer.encode(text)])  # alone: no padding
            vector = np.asarray(session.run(None, feeds)[0][0], dtype=np.float32)
            return vector / max(float(np.linalg.norm(vector)), 1e-12)

        with ThreadPoolExecutor(max(1, workers)) as pool:
            return np.vstack(list(pool.map(run_one, texts))).astype(np.float32, copy=False)

    def single_thread_session(self) -> Any:
        """The session itself when it runs on one thread (the default), else a second one that
        does: a stored vector must not depend on how ``EDAQA_ONNX_THREADS`` splits a pass."""
        if self._single is None:
            with self.lock:
                if self._single is None:
                    self._single = self.session if _threads() == 1 else _session(self.path, threads=1)
        return self._single

    def _feeds(self, encodings: list[Any]) -> dict[str, np.ndarray]:
        columns = {"input_ids": [e.ids for e in encodings],
                   "attention_mask": [e.attention_mask for e in encodings],
                   "token_type_ids": [e.type_ids for e in encodings]}
        return {name: np.asarray(columns[name], dtype=np.int64) for name in self.input_names}


def _tokenizer(definition: str, max_length: int, pad_id: int, pad_token: str, pad_type_id: int = 0,
               truncation_side: str = "right", padding_side: str = "right") -> Any:
    """What the model's tokenizer does when sentence-transformers calls it (truncation at the
    model's maximum length, padding to the longest text), as a plain ``tokenizers`` object:
    no transformers import, and no padding state shared with the PyTorch path."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(definition)
    tokenizer.enable_truncation(max_length=max_length, direction=truncation_side)
    tokenizer.enable_padding(direction=padding_side, pad_id=pad_id, pad_type_id=pad_type_id,
                             pad_token=pad_token)
    return tokenizer


def _tokenizer_spec(model: Any) -> dict[str, Any]:
    """The arguments of :func:`_tokenizer` for a loaded SentenceTransformer (kept in the sidecar)."""
    hf = model.tokenizer
    return {"definition": hf.backend_tokenizer.to_str(), "max_length": int(model.max_seq_length),
            "pad_id": int(hf.pad_token_id or 0), "pad_token": str(hf.pad_token or "[PAD]"),
            "pad_type_id": int(getattr(hf, "pad_token_type_id", 0) or 0),
            "truncation_side": str(getattr(hf, "truncation_side", "right")),
            "padding_side": str(getattr(hf, "padding_side", "right"))}


def _export(model: Any, names: tuple[str, ...], target: Path) -> None:
    import torch

    class _Pipeline(torch.nn.Module):
        """The model's modules as one forward over positional tensors (what export needs)."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            return self.model(dict(zip(names, tensors, strict=True)))["sentence_embedding"]

    sample = model.tokenizer(["an example query"], return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in names}
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.stem, suffix=".onnx.tmp", dir=target.parent)
    os.close(fd)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(_Pipeline().eval(), tuple(sample[n] for n in names), tmp,
                              input_names=list(names), output_names=["sentence_embedding"],
                              dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
                              opset_version=OPSET, dynamo=False)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _versions_digest() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = [EXPORTER_VERSION, str(OPSET)]
    for name in ("torch", "transformers", "sentence-transformers", "onnx", "onnxruntime"):
        try:
            parts.append(f"{name}={version(name)}")
        except PackageNotFoundError:
            parts.append(f"{name}=-")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:8]


def cache_path(model_key: str) -> Path:
    """Where the export of ``model_key`` lives (the library versions are in the name)."""
    return cache_dir() / f"{model_key}-{_versions_digest()}.onnx"


def sidecar_path(model_key: str) -> Path:
    """The JSON record beside an export (module docstring): what a process needs to use the
    export without loading the PyTorch model."""
    return cache_path(model_key).with_suffix(".json")


def _threads() -> int:
    return int(os.environ.get(THREADS_ENV, "1"))


def _session(target: Path, threads: int | None = None) -> Any:
    """An ORT session over ``target``, tuned for one short text at a time."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    # One thread, no busy-waiting: several sessions (base and trained encoder) live in one
    # process beside PyTorch, and ORT's default spinning pools took the cores from each
    # other (two 4 ms encodings read 15 ms each). With one thread each, EDAQA's two
    # encodings of a question run side by side (its p50 22 -> 16-20 ms; a single encoding
    # pays 1-3 ms for it). EDAQA_ONNX_THREADS=0 gives ORT's default thread count.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # Stored vectors always take a one-thread session (``OnnxEncoder.single_thread_session``).
    options.intra_op_num_threads = _threads() if threads is None else threads
    return ort.InferenceSession(str(target), options, providers=["CPUExecutionProvider"])


def _difference(fast: OnnxEncoder, reference: np.ndarray) -> float:
    """The largest difference to ``reference`` (PyTorch's probe vectors), probes one at a time
    and together."""
    together = fast.encode(list(PROBES))
    alone = np.concatenate([fast.encode([p]) for p in PROBES])
    return float(max(np.abs(together - reference).max(), np.abs(alone - reference).max()))


def _write_sidecar(path: Path, fast: OnnxEncoder, spec: dict[str, Any], reference: np.ndarray,
                   fingerprint: str) -> None:
    """Written after a validation against PyTorch passed."""
    write_json(path, {"dim": fast.dim, "input_names": list(fast.input_names), "tokenizer": spec,
                      "fingerprint": fingerprint, "probes": list(PROBES),
                      "reference": reference.astype(float).tolist()})


def load(model: Any, model_key: str, fingerprint: str = "") -> OnnxEncoder | None:
    """The ONNX twin of a loaded SentenceTransformer (exported on first use), or None when
    ONNX query encoding is off, the model cannot be exported, or the export disagrees with
    PyTorch (the caller uses PyTorch). ``fingerprint`` names the model's files as they are
    now (``encoders.files_fingerprint``); the sidecar keeps it for :func:`load_cached`."""
    if not enabled():
        return None
    with _EXPORT_LOCK:
        return _load(model, model_key, fingerprint)


def _load(model: Any, model_key: str, fingerprint: str) -> OnnxEncoder | None:
    try:
        names = tuple(n for n in ("input_ids", "attention_mask", "token_type_ids")
                      if n in model.tokenizer(["x"]))
        target = cache_path(model_key)
        if not target.is_file():
            _export(model, names, target)
        try:
            session = _session(target)
        except Exception:  # a damaged cached file: export it again, once
            _export(model, names, target)
            session = _session(target)
        inputs = tuple(i.name for i in session.get_inputs())  # what the graph kept
        spec = _tokenizer_spec(model)
        fast = OnnxEncoder(session, _tokenizer(**spec), inputs, int(model.get_embedding_dimension()), target)
        reference = np.asarray(model.encode(list(PROBES), normalize_embeddings=True,
                                            show_progress_bar=False), dtype=np.float32)
        diff = _difference(fast, reference)
        if not diff <= MAX_DIFF:
            raise ValueError(f"the export differs from PyTorch by {diff:.2e} (> {MAX_DIFF:.0e})")
        _write_sidecar(sidecar_path(model_key), fast, spec, reference, fingerprint)
        return fast
    except Exception as exc:  # any failure: PyTorch answers instead
        LOG.warning("ONNX query encoding unavailable for %s (%s: %s); using PyTorch",
                    model_key, type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "")
        return None


def _sidecar(model_key: str, fingerprint: str) -> dict[str, Any] | None:
    """The sidecar of a validated export of the model as its files are now, or None."""
    path = sidecar_path(model_key)
    if not enabled() or not path.is_file() or not cache_path(model_key).is_file():
        return None
    try:
        record = dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
    return record if record.get("fingerprint") == fingerprint and record.get("probes") == list(PROBES) else None


def cached_dim(model_key: str, fingerprint: str) -> int | None:
    """The vector width recorded with a validated export, or None (load the model instead)."""
    record = _sidecar(model_key, fingerprint)
    return int(record["dim"]) if record and "dim" in record else None


def load_cached(model_key: str, fingerprint: str) -> OnnxEncoder | None:
    """The session of a validated export, without loading the PyTorch model, or None (no export
    yet, a damaged one, one made from other model files (``fingerprint``), or a session that no
    longer reproduces the stored vectors: :func:`load` then exports and validates again)."""
    record = _sidecar(model_key, fingerprint)
    if record is None:
        return None
    try:
        target = cache_path(model_key)
        fast = OnnxEncoder(_session(target), _tokenizer(**record["tokenizer"]),
                              tuple(record["input_names"]), int(record["dim"]), target)
        if _difference(fast, np.asarray(record["reference"], dtype=np.float32)) <= MAX_DIFF:
            return fast
    except Exception as exc:  # any problem: the export path decides
        LOG.info("cached ONNX export of %s not usable (%s); re-validating", model_key, exc)
    return None
