"""The paper's parser-invariance experiment, through the real pipeline.

Two sample manuals are rewritten in four formatting-only ways (closing heading hashes, doubled
blank lines between blocks, tilde code fences, a UTF-8 BOM). The original and each variant are
indexed into their own storage with ``index_corpus`` (real Dagster runs, real MiniLM). The
``semantic_hash`` of ``typed_artifacts`` and ``occurrences`` must be identical across all five;
the ``content_hash`` (positions included) stays byte-identical for 3 of the 4 variants: only
the extra blank lines move line numbers.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
MANUALS = ("pdn.md", "cts.md")
INVARIANT_ASSETS = ("typed_artifacts", "occurrences")

_FENCE = re.compile(r"^(\s{0,3})(`{3,}|~{3,})(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+\S")


def _lines(text: str) -> Iterator[tuple[str, bool]]:
    """Each line with whether it belongs to a fenced code block (fence lines included)."""
    fence: str | None = None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(2)
                yield line, True
            else:
                yield line, False
            continue
        closing = (
            match is not None
            and match.group(2)[0] == fence[0]
            and len(match.group(2)) >= len(fence)
            and not match.group(3).strip()
        )
        if closing:
            fence = None
        yield line, True


def closing_hashes(text: str) -> str:
    """``## X`` -> ``## X ##`` for every ATX heading outside code."""
    out = []
    for line, in_code in _lines(text):
        match = _HEADING.match(line)
        out.append(f"{line.rstrip()} {match.group(1)}" if match and not in_code else line)
    return "\n".join(out)


def doubled_blank_lines(text: str) -> str:
    """Every blank line between blocks (outside code) becomes two."""
    out = []
    for line, in_code in _lines(text):
        out.append(line)
        if not in_code and not line.strip():
            out.append("")
    return "\n".join(out)


def tilde_fences(text: str) -> str:
    """Backtick code fences become tilde fences of the same length."""
    out = []
    for line, in_code in _lines(text):
        match = _FENCE.match(line)
        if in_code and match and match.group(2)[0] == "`":
            line = match.group(1) + "~" * len(match.group(2)) + match.group(3)
        out.append(line)
    return "\n".join(out)


def bom(text: str) -> str:
    return "\ufeff" + text


VARIANTS: dict[str, Callable[[str], str]] = {
    "original": lambda text: text,
    "closing_hashes": closing_hashes,
    "doubled_blank_lines": doubled_blank_lines,
    "tilde_fences": tilde_fences,
    "bom": bom,
}
# Formatting changes that do not move any line: their tables are byte-identical.
BYTE_IDENTICAL = {"closing_hashes", "tilde_fences", "bom"}


def test_variants_change_the_bytes_but_not_the_code() -> None:
    for name in MANUALS:
        text = (SAMPLE / name).read_text(encoding="utf-8")
        assert "```" in text and "\n## " in text
        code = [line for line, in_code in _lines(text) if in_code]
        for variant, rewrite in VARIANTS.items():
            new = rewrite(text)
            assert (new == text) == (variant == "original"), variant
            new_code = [line for line, in_code in _lines(new.removeprefix("\ufeff")) if in_code]
            if variant == "tilde_fences":
                new_code = [line.replace("~~~", "```") for line in new_code]
            assert new_code == code, variant  # code content is never touched
    assert tilde_fences("```tcl\nx\n```\n") == "~~~tcl\nx\n~~~\n"
    assert closing_hashes("# A\n\n```\n# comment\n```\n") == "# A #\n\n```\n# comment\n```\n"
    assert doubled_blank_lines("a\n\nb\n```\n\n```\n") == "a\n\n\nb\n```\n\n```\n\n"


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, Any]]]:
    from edaqa_pipeline.cli.index import index_corpus

    root = tmp_path_factory.mktemp("invariance")
    found: dict[str, dict[str, Any]] = {}
    with pytest.MonkeyPatch.context() as mp:
        for env in ("EDAQA_LANCEDB_URI", "EDAQA_CHUNK_MAX_TOKENS", "EDAQA_ENCODER",
                    "EDAQA_LLM_BASE_URL", "OPENAI_BASE_URL", "EDAQA_LLM_API_KEY", "OPENAI_API_KEY"):
            mp.delenv(env, raising=False)
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("DAGSTER_HOME", str(root))  # index_corpus repoints it; restored after
        for variant, rewrite in VARIANTS.items():
            corpus = root / variant / "corpus"
            corpus.mkdir(parents=True)
            for name in MANUALS:
                if variant == "original":
                    shutil.copy2(SAMPLE / name, corpus / name)
                else:
                    text = (SAMPLE / name).read_text(encoding="utf-8")
                    (corpus / name).write_bytes(rewrite(text).encode("utf-8"))
            report = index_corpus(corpus, root / variant / "storage", log=lambda *_: None)
            found[variant] = report.manifest
    yield found


def test_all_variants_index_both_manuals(manifests: dict[str, dict[str, Any]]) -> None:
    for variant, manifest in manifests.items():
        assert manifest["documents"] == sorted(MANUALS), variant
        assert manifest["failed"] == [], variant


@pytest.mark.parametrize("asset", INVARIANT_ASSETS)
def test_semantic_hash_identical_across_variants(
    manifests: dict[str, dict[str, Any]], asset: str
) -> None:
    hashes = {v: m["tables"][asset]["semantic_hash"] for v, m in manifests.items()}
    rows = {v: m["tables"][asset]["rows"] for v, m in manifests.items()}
    assert len(set(rows.values())) == 1, rows
    assert len(set(hashes.values())) == 1, hashes


def test_byte_identical_content_hashes(
    manifests: dict[str, dict[str, Any]], record_property: Callable[[str, object], None]
) -> None:
    """Records, per asset, which variants keep the original's content_hash (paper: 3 of 4)."""
    original = manifests["original"]["tables"]
    identical: dict[str, list[str]] = {}
    for asset in sorted(original):
        identical[asset] = [
            v for v, m in manifests.items()
            if v != "original" and m["tables"][asset]["content_hash"] == original[asset]["content_hash"]
        ]
    semantic = {
        asset: [
            v for v, m in manifests.items()
            if v != "original" and m["tables"][asset]["semantic_hash"] == original[asset]["semantic_hash"]
        ]
        for asset in sorted(original)
    }
    record_property("byte_identical_variants", json.dumps(identical, sort_keys=True))
    record_property("semantic_identical_variants", json.dumps(semantic, sort_keys=True))
    print("\nvariants with the original's hash (content | semantic), of 4:")
    for asset in sorted(original):
        print(f"  {asset:22s} {len(identical[asset])}/4 {identical[asset]} | "
              f"{len(semantic[asset])}/4")
    for asset in INVARIANT_ASSETS:
        assert set(identical[asset]) == BYTE_IDENTICAL, (asset, identical[asset])
