"""The Dagster resource carrying the pipeline settings (corpus, storage, LanceDB, encoder).

A thin ``ConfigurableResource`` over ``settings.Settings``; empty fields fall back to the
environment (``EDAQA_CORPUS``, ``EDAQA_STORAGE``, ``EDAQA_LANCEDB_URI``, ``EDAQA_ENCODER``),
so ``dagster dev``, the CLI and tests all resolve paths the same way.
"""


from dataclasses import replace
from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from edaqa_pipeline.settings import Settings


class PipelineSettings(ConfigurableResource):
    corpus_root: str = Field(default="", description="corpus folder ('' = EDAQA_CORPUS or data/sample)")
    storage_root: str = Field(default="", description="storage root ('' = EDAQA_STORAGE or data/storage)")
    lancedb_uri: str = Field(default="", description="LanceDB URI ('' = STORAGE/lancedb); s3:// works")
    encoder_path: str = Field(default="", description="sentence-transformers model folder ('' = packaged MiniLM)")
    anchor_cap: int = Field(default=0, description="max occurrences per cross-document anchor (0 = default 8)")

    def settings(self) -> Settings:
        base = Settings.from_env()
        storage = Path(self.storage_root).resolve() if self.storage_root else base.storage_root
        return replace(
            base,
            corpus_root=Path(self.corpus_root).resolve() if self.corpus_root else base.corpus_root,
            storage_root=storage,
            lancedb_uri=self.lancedb_uri
            or (base.lancedb_uri if not self.storage_root else str(storage / "lancedb")),
            encoder_path=self.encoder_path or base.encoder_path,
            anchor_cap=self.anchor_cap or base.anchor_cap,
        )
