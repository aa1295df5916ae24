"""Shared fixtures: the sample corpus indexed once per test session (real Dagster runs, real
MiniLM embeddings, real LanceDB), and helpers to build small corpora in tmp folders."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"
SHARED = REPO.parent / "shared"


def copy_corpus(dest: Path, names: list[str] | None = None) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(SAMPLE.iterdir()):
        if path.is_file() and (names is None or path.name in names):
            shutil.copy2(path, dest / path.name)
    return dest


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """(corpus, storage, report) of the whole sample corpus indexed through Dagster."""
    from edaqa_pipeline.cli.index import index_corpus

    root = tmp_path_factory.mktemp("sample_index")
    corpus = copy_corpus(root / "corpus")
    storage = root / "storage"
    report = index_corpus(corpus, storage, log=lambda *_: None)
    return corpus, storage, report
