"""Query encoding on ONNX Runtime: the same sentence-transformers model, exported locally.

Why: a question is one short text, and for one short text PyTorch's per-call overhead is most
of the cost. Measured on the project machine (2 cores, quiet), all-MiniLM-L6-v2, one query:
12.4 ms with PyTorch, 4.3 ms with ONNX Runtime, vectors equal to 1.1e-7. For batches of
chunk texts the two run at the same speed (10.6 vs 10.8 s for 300 chunks), so stored vectors
stay on PyTorch (``encoders._encode_fixed_shape``: their bytes are what incremental builds
compare); int8 dynamic quantisation was 1.75x faster on batches but moved the vectors (mean
cosine 0.94 to fp32), so it is not used.

sentence-transformers' own ONNX backend needs ``optimum-onnx``, whose releases (<= 0.1.0)
require transformers < 4.58 while sentence-transformers 6.2 requires >= 5: it cannot be
installed on this stack. The export here is ``torch.onnx.export`` of the loaded model's whole
module pipeline (Transformer, Pooling, any Dense, Normalize), so the exported graph computes
exactly what ``SentenceTransformer.forward`` does; it needs the ``onnx`` package, and runs on
``onnxruntime`` (both pinned in requirements/base.txt).

Each model is exported once per machine into ``EDAQA_ONNX_CACHE`` (default
``~/.cache/edaqa/onnx``), named by its content-derived ``encoder_id`` (a trained adapter has
its own), written to a temporary file and renamed, so concurrent processes never read half a
file. ``EDAQA_QUERY_BACKEND=torch`` turns it off; an export or load failure falls back to
PyTorch with one warning, never an error.
"""

from __future__ import annotations

import logging
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

LOG = logging.getLogger(__name__)
BACKEND_ENV = "EDAQA_QUERY_BACKEND"
CACHE_ENV = "EDAQA_ONNX_CACHE"
THREADS_ENV = "EDAQA_ONNX_THREADS"
OPSET = 17


def enabled() -> bool:
    """ONNX query encoding unless ``EDAQA_QUERY_BACKEND=torch``."""
    return os.environ.get(BACKEND_ENV, "onnx").strip().lower() != "torch"


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "edaqa" / "onnx")


@dataclass
class OnnxQueryModel:
    """A session over one exported model; ``encode`` returns L2-normalised float32 rows."""

    session: Any
    tokenizer: Any
    input_names: tuple[str, ...]
    max_length: int
    path: Path

    def encode(self, texts: list[str]) -> np.ndarray:
        features = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length,
                                  return_tensors="np")
        feeds = {name: np.asarray(features[name], dtype=np.int64) for name in self.input_names}
        vectors = np.asarray(self.session.run(None, feeds)[0], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)


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


def load(model: Any, model_key: str) -> OnnxQueryModel | None:
    """The ONNX twin of a loaded SentenceTransformer (exported on first use), or None when
    ONNX query encoding is off or the model cannot be exported (the caller uses PyTorch)."""
    if not enabled():
        return None
    try:
        import onnxruntime as ort

        names = tuple(n for n in ("input_ids", "attention_mask", "token_type_ids")
                      if n in model.tokenizer(["x"]))
        target = cache_dir() / f"{model_key}.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # One thread, no busy-waiting: several sessions (base and trained encoder) live in one
        # process beside PyTorch, and ORT's default spinning pools took the cores from each
        # other (two 4 ms encodings read 15 ms each). With one thread each, EDAQA's two
        # encodings of a question run side by side (its p50 22 -> 16-20 ms; a single encoding
        # pays 1-3 ms for it). EDAQA_ONNX_THREADS=0 gives ORT's default thread count.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.intra_op_num_threads = int(os.environ.get(THREADS_ENV, "1"))
        if not target.is_file():
            _export(model, names, target)
        try:
            session = ort.InferenceSession(str(target), options, providers=["CPUExecutionProvider"])
        except Exception:  # a damaged cached file: export it again, once
            _export(model, names, target)
            session = ort.InferenceSession(str(target), options, providers=["CPUExecutionProvider"])
        return OnnxQueryModel(session, model.tokenizer, names, int(model.max_seq_length), target)
    except Exception as exc:  # any failure: PyTorch answers instead
        LOG.warning("ONNX query encoding unavailable for %s (%s: %s); using PyTorch",
                    model_key, type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "")
        return None
