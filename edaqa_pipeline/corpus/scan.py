"""Scan a corpus folder: documents, their partition keys and content hashes.

A document key is the file's path relative to the corpus root, in POSIX form; keys can never
escape the root: a symlink that resolves outside it, or a name containing ``..``, is refused
with a clear error (``UnsafePathError``) rather than silently followed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

DOCUMENT_SUFFIXES = (".md", ".markdown", ".pdf")


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


def scan_corpus(root: Path) -> tuple[list[CorpusFile], list[tuple[str, str]]]:
    """Documents under ``root`` sorted by key, and (name, problem) for refused paths.

    Hidden files and folders, and files whose names start with LICENSE, are skipped.
    """
    root = root.resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"corpus folder {root} does not exist")
    files: list[CorpusFile] = []
    refused: list[tuple[str, str]] = []
    for path in sorted(root.rglob("*")):
        rel_parts = path.relative_to(root).parts
        if any(part.startswith(".") for part in rel_parts):
            continue
        if path.suffix.lower() not in DOCUMENT_SUFFIXES or path.name.upper().startswith("LICENSE"):
            continue
        if not path.is_file():
            continue
        try:
            key = document_key(root, path)
        except UnsafePathError as exc:
            refused.append((path.relative_to(root).as_posix(), str(exc)))
            continue
        files.append(CorpusFile(key, path, file_sha256(path), path.stat().st_size))
    files.sort(key=lambda f: f.key)
    return files, refused
