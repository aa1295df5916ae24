"""Bad inputs through the whole pipeline: one ``index_corpus`` run (real Dagster runs, real
MiniLM) over a corpus of two good manuals plus every kind of bad file. Each bad file must fail
only its own document, with a manifest entry that names it and says why in words; every good
document must still be indexed with its rows in the tables.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from edaqa_pipeline.corpus.scan import UnsafePathError, resolve_key, scan_corpus
from edaqa_pipeline.extraction.artifacts import extract_artifacts
from edaqa_pipeline.extraction.chunks import build_chunks
from edaqa_pipeline.extraction.occurrences import build_occurrences
from edaqa_pipeline.parsing.markdown import parse_markdown
from edaqa_pipeline.storage.tables import partition_path

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"

UNICODE_NAME = "Über manual v2.md"
UNICODE_TEXT = """\
# Über manual

## set_wire_rc

The `set_wire_rc` command sets the resistance and capacitance per unit length used for
wires before routing. The layer must exist in the technology LEF.

```tcl
set_wire_rc -signal -layer M2
```
"""

UNTERMINATED_TEXT = """\
# Unterminated example

The code block below never closes; it runs to the end of the file.

```tcl
read_def results/floorplan.def
global_route -verbose
"""

# Valid Markdown that the parser turns into a block with empty text (see the xfail below).
EMPTY_BLOCK_TEXT = "# Empty block\n\nThe example below was left empty on purpose.\n\n```tcl\n```\n"
EDGE = ["empty_block.md"]  # valid files that should index, but fail today (xfail tests)

INVALID_UTF8 = "# Caf\u00e9 manual\n\nLatin-1 text: caf\u00e9.\n".encode("latin-1")
BINARY = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4
BIG_MB = 50

GOOD = ["cts.md", "pdn.md", "unterminated.md", UNICODE_NAME]
FAILING = ["binary.md", "big.md", "empty.md", "latin1.md", "corrupt.pdf", "encrypted.pdf"]

ENV_CLEARED = (
    "EDAQA_MAX_DOCUMENT_MB", "EDAQA_LANCEDB_URI", "EDAQA_ENCODER", "EDAQA_CHUNK_MAX_TOKENS",
    "EDAQA_LLM_BASE_URL", "OPENAI_BASE_URL", "EDAQA_LLM_API_KEY", "OPENAI_API_KEY", "EDAQA_LLM_MODEL",
)


def index_with_defaults(corpus: Path, storage: Path) -> None:
    """``index_corpus`` as a fresh shell runs it: no ``ENV_CLEARED`` setting, the storage
    root's own Dagster home; the environment is restored after."""
    from edaqa_pipeline.cli.index import index_corpus

    with pytest.MonkeyPatch.context() as mp:
        for name in ENV_CLEARED:
            mp.delenv(name, raising=False)
        mp.setenv("DAGSTER_HOME", str(storage / "dagster_home"))
        index_corpus(corpus, storage, log=lambda *_: None)


def _pdf_with_text(text: str) -> Any:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), text)
    return doc


def write_encrypted_pdf(path: Path) -> None:
    import pymupdf

    doc = _pdf_with_text("Secret layout rules for the grid.")
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="o", user_pw="u")
    doc.close()


def write_image_only_pdf(path: Path) -> None:
    import pymupdf

    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 64, 64), 0)
    pix.clear_with(180)
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_image(pymupdf.Rect(72, 72, 272, 272), stream=pix.tobytes("png"))
    doc.save(path)
    doc.close()


def write_big_markdown(path: Path, mib: int) -> None:
    line = b"word " * 51 + b"\n"  # 256 bytes
    block = line * ((1 << 20) // len(line))  # exactly 1 MiB
    with path.open("wb") as fh:
        for _ in range(mib):
            fh.write(block)


@dataclass
class Indexed:
    corpus: Path
    storage: Path
    outside: Path
    report: Any
    manifest: dict[str, Any]
    failed: dict[str, str]
    refused: dict[str, str]

    def table(self, asset: str, key: str) -> pl.DataFrame:
        return pl.read_parquet(partition_path(self.storage / "tables", asset, key))


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Indexed]:
    from edaqa_pipeline.cli.index import index_corpus

    root = tmp_path_factory.mktemp("bad_inputs")
    corpus, storage, outside = root / "corpus", root / "storage", root / "outside"
    corpus.mkdir()
    outside.mkdir()
    for name in ("pdn.md", "cts.md"):
        shutil.copy2(SAMPLE / name, corpus / name)
    (corpus / UNICODE_NAME).write_text(UNICODE_TEXT, encoding="utf-8")
    (corpus / "unterminated.md").write_text(UNTERMINATED_TEXT, encoding="utf-8")
    (corpus / "empty.md").write_bytes(b"")
    (corpus / "bom_only.md").write_bytes(b"\xef\xbb\xbf\n")
    (corpus / "empty_block.md").write_text(EMPTY_BLOCK_TEXT, encoding="utf-8")
    (corpus / "binary.md").write_bytes(BINARY)
    (corpus / "latin1.md").write_bytes(INVALID_UTF8)
    write_big_markdown(corpus / "big.md", BIG_MB)
    (corpus / "corrupt.pdf").write_bytes(b"%PDF-1.4 garbage")
    write_encrypted_pdf(corpus / "encrypted.pdf")
    write_image_only_pdf(corpus / "scanned.pdf")
    # a symlinked file and a symlinked folder that lead out of the corpus root
    (outside / "secret.md").write_text("# Secret\n\nNot part of the corpus.\n", encoding="utf-8")
    (corpus / "escape.md").symlink_to(outside / "secret.md")
    (corpus / "linked").symlink_to(outside, target_is_directory=True)

    with pytest.MonkeyPatch.context() as mp:
        for name in ENV_CLEARED:
            mp.delenv(name, raising=False)
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("DAGSTER_HOME", str(storage / "dagster_home"))  # index_corpus sets it; restored after
        report = index_corpus(corpus, storage, log=lambda *_: None)
        manifest = json.loads((storage / "manifest.json").read_text())
        refused = {r["document"]: r["error"] for r in report.refused}
        failed = {f["document"]: f["error"] for f in manifest["failed"] if f["document"] not in refused}
        yield Indexed(corpus, storage, outside, report, manifest, failed, refused)


def expected_rows(indexed: Indexed) -> dict[str, int]:
    """Rows the good documents must contribute, from the pure functions."""
    rows = {"parsed_documents": 0, "typed_artifacts": 0, "chunks": 0, "occurrences": 0}
    for key in indexed.manifest["documents"]:
        _, blocks = parse_markdown((indexed.corpus / key).read_bytes(), key)
        artifacts = extract_artifacts(blocks)
        chunks = build_chunks(blocks)
        rows["parsed_documents"] += len(blocks)
        rows["typed_artifacts"] += len(artifacts)
        rows["chunks"] += len(chunks)
        rows["occurrences"] += len(build_occurrences(blocks, artifacts, chunks))
    return rows


def assert_readable(key: str, reason: str) -> None:
    """A DocumentError's text ('<key>: <problem>'), not an exception dump."""
    assert reason.startswith(f"{key}: "), reason
    assert "Error:" not in reason and "Traceback" not in reason, reason
    assert "\n" not in reason


# --- the good documents -----------------------------------------------------------------


def test_good_documents_are_indexed_with_their_rows(indexed: Indexed) -> None:
    manifest = indexed.manifest
    assert set(GOOD) <= set(manifest["documents"]) <= {*GOOD, *EDGE}
    assert indexed.report.documents == manifest["documents"]
    tables = manifest["tables"]
    for asset, rows in expected_rows(indexed).items():
        assert tables[asset]["rows"] == rows, asset
    assert tables["chunk_embeddings"]["rows"] == tables["chunks"]["rows"]
    for key in GOOD:
        for asset in ("parsed_documents", "typed_artifacts", "chunks", "occurrences", "chunk_embeddings"):
            df = indexed.table(asset, key)
            assert df.height > 0, (asset, key)
            assert df["document"].unique().to_list() == [key]
    assert manifest["units"]["units"] > 0


def test_every_bad_file_fails_alone(indexed: Indexed) -> None:
    documents = set(indexed.manifest["documents"])
    for key in [*FAILING, *indexed.failed, *indexed.refused]:
        assert key not in documents
        assert not partition_path(indexed.storage / "tables", "parsed_documents", key).exists()
    assert set(FAILING) <= set(indexed.failed)
    print("\nfailed:", *(f"  {k}: {v}" for k, v in sorted({**indexed.failed, **indexed.refused}.items())), sep="\n")
    # each failure is listed once
    keys = [f["document"] for f in indexed.manifest["failed"]]
    assert len(keys) == len(set(keys))


# --- one test per bad case ---------------------------------------------------------------


def test_empty_file(indexed: Indexed) -> None:
    assert indexed.failed["empty.md"] == "empty.md: file is empty (no Markdown content)"


def test_bom_only_file_is_empty(indexed: Indexed) -> None:
    assert indexed.failed["bom_only.md"] == "bom_only.md: file is empty (no Markdown content)"


def test_bom_only_file_fails_alone(indexed: Indexed) -> None:
    assert "bom_only.md" in indexed.failed
    assert "bom_only.md" not in indexed.manifest["documents"]


def test_valid_markdown_with_an_empty_code_block_indexes(indexed: Indexed) -> None:
    assert "empty_block.md" in indexed.manifest["documents"], indexed.failed.get("empty_block.md")


def test_binary_file_with_md_name(indexed: Indexed) -> None:
    offset = BINARY.index(b"\x00")
    assert indexed.failed["binary.md"] == (
        f"binary.md: binary content: NUL byte at offset {offset}; not a text file"
    )


def test_invalid_utf8(indexed: Indexed) -> None:
    reason = indexed.failed["latin1.md"]
    assert_readable("latin1.md", reason)
    offset = INVALID_UTF8.index(b"\xe9")
    assert reason.startswith(f"latin1.md: invalid UTF-8 at byte {offset} (b'\\xe9')")
    assert "re-encode the file as UTF-8" in reason


def test_unterminated_code_fence_parses_to_end_of_file(indexed: Indexed) -> None:
    key = "unterminated.md"
    assert key in indexed.manifest["documents"]
    blocks = indexed.table("parsed_documents", key)
    code = blocks.filter(pl.col("kind") == "code").to_dicts()
    n_lines = len(UNTERMINATED_TEXT.rstrip("\n").split("\n"))
    assert len(code) == 1
    assert code[0]["text"] == "read_def results/floorplan.def\nglobal_route -verbose"
    assert code[0]["language"] == "tcl"
    assert (code[0]["start_line"], code[0]["end_line"]) == (5, n_lines)
    assert json.loads(code[0]["meta"])["unterminated_fence"] is True
    artifacts = indexed.table("typed_artifacts", key)
    assert "codeblock" in artifacts["artifact_type"].to_list()
    occurrences = indexed.table("occurrences", key)
    assert "global_route" not in occurrences["anchor"].to_list()
    assert occurrences["anchor"].to_list() == ["read_def"]


def test_fifty_mb_markdown_hits_the_size_limit(indexed: Indexed) -> None:
    assert (indexed.corpus / "big.md").stat().st_size == BIG_MB << 20
    assert indexed.failed["big.md"] == (
        "big.md: file is 50.0 MiB, larger than the 20 MiB limit "
        "(raise EDAQA_MAX_DOCUMENT_MB to index it)"
    )


def test_corrupt_pdf(indexed: Indexed) -> None:
    reason = indexed.failed["corrupt.pdf"]
    assert_readable("corrupt.pdf", reason)
    assert "pdf" in reason.lower()


def test_encrypted_pdf(indexed: Indexed) -> None:
    reason = indexed.failed["encrypted.pdf"]
    assert_readable("encrypted.pdf", reason)
    assert "encrypted" in reason.lower() or "password" in reason.lower()


def test_pdf_without_text_layer(indexed: Indexed) -> None:
    """Either refused with a reason about the missing text, or indexed with a figure block."""
    key = "scanned.pdf"
    if key in indexed.failed:
        reason = indexed.failed[key]
        assert_readable(key, reason)
        assert any(word in reason.lower() for word in ("text", "ocr", "scanned", "image")), reason
    else:
        assert key in indexed.manifest["documents"]
        blocks = indexed.table("parsed_documents", key)
        assert blocks.height > 0
        assert blocks["page"].to_list() == [1] * blocks.height
        assert set(blocks["kind"].to_list()) <= {"figure", "image"}


def test_unicode_file_name_with_spaces(indexed: Indexed) -> None:
    assert UNICODE_NAME in indexed.manifest["documents"]
    assert UNICODE_NAME in indexed.report.reindexed
    blocks = indexed.table("parsed_documents", UNICODE_NAME)
    assert blocks["document"].unique().to_list() == [UNICODE_NAME]
    assert blocks.filter(pl.col("kind") == "heading")["text"].to_list() == ["Über manual", "set_wire_rc"]
    occurrences = indexed.table("occurrences", UNICODE_NAME)
    assert occurrences["anchor"].to_list() == ["set_wire_rc"]
    chunks = indexed.table("chunks", UNICODE_NAME)
    assert chunks["document"].unique().to_list() == [UNICODE_NAME]


def test_symlinks_out_of_the_root_are_refused(indexed: Indexed) -> None:
    assert "escape.md" in indexed.refused
    reason = indexed.refused["escape.md"]
    assert reason.startswith("escape.md: resolves to ")
    assert "outside the corpus root" in reason
    assert {"document": "escape.md", "error": reason} in indexed.manifest["failed"]
    # a symlinked folder is either not walked or refused, never indexed
    assert not any(d.startswith("linked/") for d in indexed.manifest["documents"])
    for key, reason in indexed.refused.items():
        if key.startswith("linked/"):
            assert "outside the corpus root" in reason
    assert "Not part of the corpus" not in json.dumps(indexed.manifest)


def test_scan_corpus_refuses_the_symlink(indexed: Indexed) -> None:
    scan = scan_corpus(indexed.corpus)
    files, refused = scan.files, scan.refused
    assert "escape.md" in dict(refused)
    assert all((f.path.resolve()).is_relative_to(indexed.corpus.resolve()) for f in files)


@pytest.mark.parametrize("key", ["../secret.md", "a/../../secret.md", "/etc/passwd", "docs/../../x.md"])
def test_resolve_key_refuses_keys_leaving_the_root(tmp_path: Path, key: str) -> None:
    (tmp_path / "docs").mkdir()
    with pytest.raises(UnsafePathError, match="not a valid document key"):
        resolve_key(tmp_path / "docs", key)


def test_resolve_key_refuses_a_key_through_a_symlink(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "x.md").write_text("# x\n")
    (root / "link.md").symlink_to(outside / "x.md")
    with pytest.raises(UnsafePathError, match="resolves outside the corpus root"):
        resolve_key(root, "link.md")
    (root / "ok.md").write_text("# ok\n")
    assert resolve_key(root, "ok.md") == root / "ok.md"


# --- re-running: only failed files again; a fixed file indexes ----------------------------
# Runs last: it changes the corpus and the storage of the module fixture.


def test_rerun_retries_only_failed_files_and_indexes_a_fixed_one(indexed: Indexed, tmp_path: Path) -> None:
    import dataclasses

    from edaqa_pipeline.cli.index import index_corpus

    # on a copy (corpus, tables and the Dagster instance): fixing empty.md must not change the
    # module's shared index, which the other tests read in any order
    corpus, storage = tmp_path / "corpus", tmp_path / "storage"
    shutil.copytree(indexed.corpus, corpus, symlinks=True)
    shutil.copytree(indexed.storage, storage)
    indexed = dataclasses.replace(indexed, corpus=corpus, storage=storage)
    first_failed = set(indexed.failed)
    with pytest.MonkeyPatch.context() as mp:
        for name in ENV_CLEARED:
            mp.delenv(name, raising=False)
        mp.setenv("DAGSTER_HOME", str(indexed.storage / "dagster_home"))
        again = index_corpus(indexed.corpus, indexed.storage, log=lambda *_: None)
        assert again.reindexed == []  # no good file was re-run
        assert {f["document"] for f in again.failed} == first_failed  # every failed one was
        assert again.documents == indexed.manifest["documents"]
        assert again.manifest["tables"] == indexed.manifest["tables"]

        (indexed.corpus / "empty.md").write_text("# Now valid\n\nThe file has content now.\n")
        fixed = index_corpus(indexed.corpus, indexed.storage, log=lambda *_: None)
        assert fixed.reindexed == ["empty.md"]
        assert {f["document"] for f in fixed.failed} == first_failed - {"empty.md"}
        assert fixed.documents == sorted([*indexed.manifest["documents"], "empty.md"])
        assert "empty.md" not in {f["document"] for f in fixed.manifest["failed"]}
        blocks = pl.read_parquet(partition_path(indexed.storage / "tables", "parsed_documents", "empty.md"))
        assert blocks["text"].to_list() == ["Now valid", "The file has content now."]
