"""Scan a corpus folder: documents, their partition keys and content hashes.

A document key is the file's path relative to the corpus root, in POSIX form; keys can never
escape the root: a symlink that resolves outside it, or a name containing ``..``, is refused
with a clear error (``UnsafePathError``) rather than silently followed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from edaqa_pipeline.model import document_format


class UnsafePathError(ValueError):
    """A document path that would read outside the corpus root."""


@dataclass(frozen=True)
class CorpusFile:
    key: str
    path: Path
    sha256: str
    n_bytes: int


def document_key(root: Path, path: Path) -> str:
    """Partition key of ``path``: its path relative to ``root``, checked to stay inside it."""
    rel = path.relative_to(root).as_posix()
    if ".." in Path(rel).parts:
        raise UnsafePathError(f"{rel}: '..' in a document path is not allowed")
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise UnsafePathError(f"{rel}: resolves to {resolved}, outside the corpus root {root}")
    return rel


def resolve_key(root: Path, key: str) -> Path:
    """The file of a document key, refusing keys that would leave the corpus root."""
    if ".." in Path(key).parts or Path(key).is_absolute():
        raise UnsafePathError(f"{key}: '..' or an absolute path is not a valid document key")
    path = root / key
    if not path.resolve().is_relative_to(root.resolve()):
        raise UnsafePathError(f"{key}: resolves outside the corpus root {root}")
    return path


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_type(path: Path) -> str:
    """What a skipped file is, for the manifest: its suffix (``png``), ``license`` or
    ``no suffix``."""
    if path.name.upper().startswith("LICENSE"):
        return "license"
    return path.suffix.lower().lstrip(".") or "no suffix"


@dataclass(frozen=True)
class CorpusScan:
    """What a corpus folder holds: the documents a parser reads (sorted by key), the paths
    refused as unsafe (name, problem), and the files no parser reads (name, type)."""

    files: list[CorpusFile]
    refused: list[tuple[str, str]]
    skipped: list[tuple[str, str]]


def scan_corpus(root: Path) -> CorpusScan:
    """Scan ``root``. Hidden files and folders are ignored; files of a type no parser reads,
    and files whose names start with LICENSE, are listed as skipped with their type."""
    root = root.resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"corpus folder {root} does not exist")
    files: list[CorpusFile] = []
    refused: list[tuple[str, str]] = []
    skipped: list[tuple[str, str]] = []
    for path in sorted(root.rglob("*")):
        rel_parts = path.relative_to(root).parts
        if any(part.startswith(".") for part in rel_parts) or not path.is_file():
            continue
        if document_format(path.name) is None or path.name.upper().startswith("LICENSE"):
            skipped.append((path.relative_to(root).as_posix(), file_type(path)))
            continue
        try:
            key = document_key(root, path)
        except UnsafePathError as exc:
            refused.append((path.relative_to(root).as_posix(), str(exc)))
            continue
        files.append(CorpusFile(key, path, file_sha256(path), path.stat().st_size))
    files.sort(key=lambda f: f.key)
    return CorpusScan(files, refused, skipped)
