"""A documentation site as it ships: Markdown manuals built into HTML by real Sphinx with MyST
and the Read the Docs theme (``scripts/build_html_site.py``), indexed through Dagster as one
corpus with its theme assets, a few bad pages and a file of a type nothing reads."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from edaqa_pipeline_tests.fixtures_index import REPO, copy_corpus
from edaqa_pipeline_tests.test_bad_inputs import ENV_CLEARED, index_with_defaults

pytestmark = pytest.mark.slow
# text the Read the Docs theme puts around every page; none of it is documentation
CHROME = ("Edit on GitHub", "View page source", "Built with", "Sphinx", "Read the Docs",
          "Copyright", "©", "Search docs", "¶", "Previous", "Next")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("html_site")
    manuals = copy_corpus(root / "manuals", ["cts.md", "pdn.md"])
    site = root / "site"
    subprocess.run([sys.executable, str(REPO / "scripts" / "build_html_site.py"),
                    "--corpus", str(manuals), "--out", str(site)], check=True, capture_output=True)
    (site / "binary.html").write_bytes(b"GIF89a\x01\x00\x01\x00\x00\x00\x00;")
    (site / "huge.htm").write_bytes(b"<p>" + b"x" * (21 << 20) + b"</p>")
    (site / "notes.txt").write_text("not documentation\n")
    storage = root / "storage"
    index_with_defaults(site, storage)
    manifest = json.loads((storage / "manifest.json").read_text())
    return site, storage, manifest


def test_every_page_indexes_and_each_bad_file_fails_alone(site: Any) -> None:
    _, _, manifest = site
    assert set(manifest["documents"]) == {"cts.html", "pdn.html", "index.html", "genindex.html",
                                          "search.html"}
    failed = {f["document"]: f["error"] for f in manifest["failed"]}
    assert set(failed) == {"binary.html", "huge.htm"}
    assert "binary.html: binary content: NUL byte" in failed["binary.html"]
    assert "huge.htm: file is 21.0 MiB, larger than the 20 MiB limit" in failed["huge.htm"]
    skipped = {s["file"]: s["type"] for s in manifest["skipped"]}
    assert skipped["notes.txt"] == "txt"
    assert any(t == "css" and f.startswith("_static/") for f, t in skipped.items())


def test_no_chunk_holds_site_chrome(site: Any) -> None:
    _, storage, _ = site
    chunks = pl.read_parquet(storage / "tables" / "chunks" / "*.parquet")
    assert chunks.height > 20
    for text in chunks["text"].to_list():
        for chrome in CHROME:
            assert chrome not in text, (chrome, text[:200])


def test_a_question_is_answered_from_the_page_and_its_citation_opens_at_the_anchor(site: Any) -> None:
    from edaqa_pipeline.service.core import EdaqaService

    root, storage, _ = site
    service = EdaqaService.open(storage)
    record = service.answer("What is the default of -starts_with in define_power_grid?", "edaqa", 10)
    assert "GROUND" in record["answer"]
    row = "| `-starts_with` | Net of the first rail at the bottom of the core. Allowed values are " \
          "`POWER` and `GROUND`. Default: `GROUND`. |"
    cited = [e for e in record["evidence"] if e["doc"] == "pdn.html" and row in e["text"]]
    assert cited, record["evidence"]
    # the table row reaches evidence as a row under its header, as a Markdown table's does
    assert any("| Switch Name | Description |" in e["text"] for e in cited)
    first_claim = record["claims"][0]
    assert "GROUND" in first_claim["text"] and "pdn.html" in json.dumps(first_claim["citations"])
    view = service.read_lines("pdn.html", cited[0]["start_line"], cited[0]["end_line"])
    assert row in view.lines
    page, _, anchor = view.opens.partition("#")
    assert page == "pdn.html" and anchor
    assert re.search(rf'id="{re.escape(anchor)}"', (root / "pdn.html").read_text())


def test_a_corpus_with_nothing_readable_exits_non_zero(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "notes.txt").write_text("plain text\n")
    (corpus / "diagram.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    env = {k: v for k, v in os.environ.items() if k not in ENV_CLEARED}
    done = subprocess.run([str(Path(sys.executable).parent / "edaqa"), "index", "--corpus", str(corpus),
                           "--storage", str(tmp_path / "storage"), "--quiet"],
                          capture_output=True, text=True, env={**env, "HF_HUB_OFFLINE": "1"}, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "skipped notes.txt (txt)" in done.stdout and "skipped diagram.png (png)" in done.stdout
    assert f"FAILED {corpus}: no document could be read (found: png, txt;" in done.stderr
