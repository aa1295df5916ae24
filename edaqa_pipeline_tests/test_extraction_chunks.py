"""Extraction layer: chunks (source lines, headings, unsplit tables, long prose and code)
and ids that survive formatting changes. Pure functions only."""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from edaqa_pipeline.extraction.chunks import approx_tokens, block_chunk_map, build_chunks
from edaqa_pipeline.extraction.occurrences import build_occurrences
from edaqa_pipeline.model import ARTIFACTS_SCHEMA, BLOCKS_SCHEMA, OCCURRENCES_SCHEMA, frame
from edaqa_pipeline.storage.hashing import content_hash, semantic_hash
from edaqa_pipeline_tests._helpers_extraction import GRID, SAMPLE_DIR, Rows, blocks_of, pipeline

# --- chunks ------------------------------------------------------------------------------


def same_lines(chunk: dict[str, Any], source: str, blocks: Rows) -> None:
    """Chunk text is the file's lines [start, end]: every line inside a block is identical,
    lines between blocks (blank lines, rules, comments) may appear as empty lines."""
    in_block = {n for b in blocks for n in range(b["start_line"], b["end_line"] + 1)}
    file_lines = source.split("\n")[chunk["start_line"] - 1 : chunk["end_line"]]
    text_lines = chunk["text"].split("\n")
    assert len(text_lines) == len(file_lines), chunk
    for number, got, want in zip(range(chunk["start_line"], chunk["end_line"] + 1), text_lines, file_lines, strict=True):
        if number in in_block:
            assert got == want, (number, got, want)
        else:
            assert got in ("", want), (number, got, want)


@pytest.mark.parametrize("path", sorted(SAMPLE_DIR.glob("*.md")), ids=lambda p: p.name)
def test_chunk_text_is_the_source_lines(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    blocks = blocks_of(source, path.name)
    chunks = build_chunks(blocks)
    assert chunks
    for chunk in chunks:
        same_lines(chunk, source, blocks)
        assert chunk["n_tokens"] == approx_tokens(chunk["text"]) == math.ceil(len(chunk["text"]) / 4)
        # The encoders see the section path and the blocks' content (no heading / fence markup).
        heading = " > ".join(chunk["section_path"])
        body = "\n".join(
            b["text"] for b in blocks if b["block_id"] in chunk["block_ids"] and b["kind"] != "heading"
        )
        if all(b["block_id"] not in chunk["block_ids"] or len(b["text"]) < 1600 for b in blocks):
            assert chunk["embed_text"] == (f"{heading}\n{body}" if heading else body)
        assert "```" not in chunk["embed_text"] and "~~~" not in chunk["embed_text"]
    assert [c["ordinal"] for c in chunks] == list(range(len(chunks)))
    # chunks cover the blocks in order, without overlapping
    ends = [(c["start_line"], c["end_line"]) for c in chunks]
    assert all(a[1] < b[0] for a, b in pairwise(ends))


def test_chunks_start_at_headings() -> None:
    chunks = build_chunks(blocks_of(GRID))
    assert [(c["start_line"], c["end_line"], c["section_path"]) for c in chunks] == [
        (1, 1, ["Grid Tool"]),
        (3, 9, ["Grid Tool", "define_pdn_grid"]),
        (11, 24, ["Grid Tool", "define_pdn_grid", "Options"]),
    ]
    assert chunks[1]["text"] == "\n".join(GRID.split("\n")[2:9])


def test_a_table_is_never_split() -> None:
    rows = "\n".join(f"| `-opt{i}` | Description of option number {i} in words. |" for i in range(40))
    src = f"# T\n\n## Opts\n\n| Switch | Description |\n| --- | --- |\n{rows}\n\nAfter table.\n"
    blocks = blocks_of(src)
    table = next(b for b in blocks if b["kind"] == "table")
    assert approx_tokens(table["text"]) > 4 * 100
    chunks = build_chunks(blocks, max_tokens=100)
    holding = [c for c in chunks if table["block_id"] in c["block_ids"]]
    assert len(holding) == 1
    assert (holding[0]["start_line"], holding[0]["end_line"]) == (3, 46)
    assert table["raw"] in holding[0]["text"]
    for chunk in chunks:
        same_lines(chunk, src, blocks)


def test_long_prose_splits_at_sentence_ending_lines() -> None:
    lines = []
    for i in range(30):
        lines.append(f"Sentence number {i} talks about the grid and the straps in")
        lines.append(f"some detail, with words to fill the line {i}.")
    src = "# T\n\n" + "\n".join(lines) + "\n"
    blocks = blocks_of(src)
    chunks = build_chunks(blocks, max_tokens=100)
    assert len(chunks) == 8
    paragraph = blocks[1]["block_id"]
    assert all(paragraph in c["block_ids"] for c in chunks)
    for chunk in chunks:
        same_lines(chunk, src, blocks)
        assert chunk["text"].endswith(".")  # never cut inside a sentence
        assert chunk["n_tokens"] <= 100 * 1.5
    # consecutive, gap-free parts of the paragraph
    assert chunks[0]["start_line"] == 1
    assert all(a["end_line"] + 1 == b["start_line"] for a, b in pairwise(chunks))
    assert chunks[-1]["end_line"] == 62
    assert block_chunk_map(chunks)[paragraph] == [c["chunk_id"] for c in chunks]


def test_long_code_splits_at_line_boundaries_without_fences_in_ids() -> None:
    body = "\n".join(f"set_cmd_{i} -value {i}" for i in range(200))
    backtick = build_chunks(blocks_of(f"# T\n\n```tcl\n{body}\n```\n"), max_tokens=100)
    tilde = build_chunks(blocks_of(f"# T\n\n~~~tcl\n{body}\n~~~\n"), max_tokens=100)
    assert len(backtick) > 5
    assert [c["chunk_id"] for c in backtick] == [c["chunk_id"] for c in tilde]


EQUIVALENT = {
    "original": "# T\n\n## read_def\n\nReads a DEF file.\n\n```tcl\nread_def design.def\n```\n\n"
    "| A | B |\n| --- | --- |\n| 1 | 2 |\n",
    "blank lines, closing hashes and tilde fences": "# T ##\n\n\n\n## read_def ##\n\n\nReads a DEF file.\n\n\n"
    "~~~tcl\nread_def design.def\n~~~\n\n\n| A | B |\n| --- | --- |\n| 1 | 2 |\n",
}


def test_chunk_ids_survive_formatting_changes() -> None:
    original = pipeline(EQUIVALENT["original"])
    variant = pipeline(EQUIVALENT["blank lines, closing hashes and tilde fences"])
    assert [c["chunk_id"] for c in original[2]] == [c["chunk_id"] for c in variant[2]]
    assert [c["start_line"] for c in original[2]] != [c["start_line"] for c in variant[2]]
    # block, artifact and occurrence ids too; the tables hash the same semantically
    for i, schema in ((0, BLOCKS_SCHEMA), (1, ARTIFACTS_SCHEMA), (3, OCCURRENCES_SCHEMA)):
        id_column = next(iter(schema))
        assert [r[id_column] for r in original[i]] == [r[id_column] for r in variant[i]]
        a, b = frame(original[i], schema), frame(variant[i], schema)
        assert semantic_hash(a) == semantic_hash(b)
        assert content_hash(a) != content_hash(b)  # line numbers moved


def test_build_chunks_of_nothing() -> None:
    assert build_chunks([]) == []
    assert build_occurrences([], [], []) == []


def test_images_of_one_paragraph_are_written_once_in_the_chunk_text() -> None:
    source = "# T\n\n![a](a.png)\n![b](b.png)\n![c](c.png)\n\nText after.\n"
    blocks = blocks_of(source)
    assert sum(b["kind"] == "image" for b in blocks) == 3  # three blocks over lines 3-5
    (chunk,) = build_chunks(blocks)
    same_lines(chunk, source, blocks)
    assert chunk["text"].count("![a](a.png)") == 1
    assert len(chunk["line_kinds"]) == chunk["end_line"] - chunk["start_line"] + 1
