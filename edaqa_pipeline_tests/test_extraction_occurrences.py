"""Extraction layer: occurrences (grouping of artifacts into events) and the invariants
every document must satisfy. Pure functions only."""

from __future__ import annotations

from pathlib import Path

import pytest

from edaqa_pipeline.extraction.artifacts import extract_artifacts
from edaqa_pipeline.extraction.chunks import build_chunks
from edaqa_pipeline.extraction.occurrences import build_occurrences, grouping_section
from edaqa_pipeline.model import (
    ARTIFACTS_SCHEMA,
    BLOCKS_SCHEMA,
    CHUNKS_SCHEMA,
    OCCURRENCES_SCHEMA,
    frame,
)
from edaqa_pipeline.parsing.markdown import parse_markdown
from edaqa_pipeline.validation import structure
from edaqa_pipeline_tests._helpers_extraction import GRID, READ, SAMPLE_DIR, Rows, pipeline

# --- occurrences -------------------------------------------------------------------------


def test_grouping_section_drops_trailing_generic_headings() -> None:
    assert grouping_section(["Tool", "read_def", "Options"]) == ("Tool", "read_def")
    assert grouping_section(["Tool", "read_def", "Example", "`Options`"]) == ("Tool", "read_def")
    assert grouping_section(["Examples"]) == ("Examples",)  # never empties the path
    assert grouping_section(["Tool", "Options", "read_def"]) == ("Tool", "Options", "read_def")


def test_generic_subheadings_merge_into_the_parent_section() -> None:
    occurrences = pipeline(GRID, "grid.md")[3]
    assert [(o["anchor"], o["anchor_kind"], o["anchor_rule"], o["section_path"], o["line_spans"]) for o in occurrences] == [
        # synopsis, code and the Options table are one event; the short diagnostic joins it
        ("define_pdn_grid", "command", "code.first_command", ["Grid Tool", "define_pdn_grid"],
         [[5, 5], [7, 9], [13, 15], [17, 17]]),
        # the ordered procedure is a second boundary: a second event, in the same section
        ("define_pdn_grid", "command", "heading.command", ["Grid Tool", "define_pdn_grid"],
         [[19, 20], [22, 22], [24, 24]]),
    ]
    assert occurrences[0]["artifact_types"] == ["codeblock", "constraint", "diagnostic", "inline_command", "table", "text"]
    assert occurrences[1]["artifact_types"] == ["figure", "file", "inline_command", "procedure", "text"]


TWO_EXAMPLES = """\
# Flow

## Running the flow

The flow reads the technology first and routes the design at the end of the run.

```tcl
read_lef tech.lef
```

The second example routes every signal net of the design after placement is done.

```tcl
global_route -verbose
```
"""


def test_two_code_blocks_in_one_section_are_two_occurrences() -> None:
    _, artifacts, _, occurrences = pipeline(TWO_EXAMPLES, min_chars=0)
    assert [(o["anchor"], o["anchor_rule"]) for o in occurrences] == [
        ("read_lef", "code.first_command"),
        ("global_route", "code.first_command"),
    ]
    by_id = {a["artifact_id"]: a for a in artifacts}
    for occ in occurrences:
        assert [by_id[a]["artifact_type"] for a in occ["artifact_ids"]].count("codeblock") == 1
        assert occ["section_path"] == ["Flow", "Running the flow"]


def test_short_occurrences_merge_into_the_previous_one() -> None:
    _, _, _, occurrences = pipeline(TWO_EXAMPLES)  # default min_chars=120: the 2nd is short
    assert len(occurrences) == 1
    assert occurrences[0]["anchor"] == "read_lef"
    assert occurrences[0]["line_spans"] == [[5, 5], [7, 9], [11, 11], [13, 15]]


def test_a_short_first_occurrence_merges_into_the_next_one() -> None:
    src = "# A\n\n## Intro\n\nShort.\n\n## read_def\n\n" + "Long words about reading designs. " * 5 + "\n"
    _, _, _, occurrences = pipeline(src)
    assert len(occurrences) == 1
    assert occurrences[0]["line_spans"] == [[5, 5], [9, 9]]
    assert occurrences[0]["section_path"] == ["A", "Intro"]  # the section of its first block


def check_document(blocks: Rows, artifacts: Rows, chunks: Rows, occurrences: Rows, n_lines: int) -> None:
    """The invariants every document must satisfy."""
    chunk_ids = {c["chunk_id"] for c in chunks}
    artifact_ids = [a["artifact_id"] for a in artifacts]
    for occ in occurrences:
        assert occ["artifact_ids"], occ
        assert occ["chunk_ids"], occ
        assert set(occ["chunk_ids"]) <= chunk_ids
        assert occ["artifact_types"] == sorted({a["artifact_type"] for a in artifacts if a["artifact_id"] in occ["artifact_ids"]})
    # every artifact belongs to exactly one occurrence
    assert sorted(a for o in occurrences for a in o["artifact_ids"]) == sorted(artifact_ids)
    assert len({o["occurrence_id"] for o in occurrences}) == len(occurrences)
    b, a, c, o = (frame(blocks, BLOCKS_SCHEMA), frame(artifacts, ARTIFACTS_SCHEMA),
                  frame(chunks, CHUNKS_SCHEMA), frame(occurrences, OCCURRENCES_SCHEMA))
    assert structure.block_problems(b, n_lines) == []
    assert structure.artifact_problems(a, n_lines) == []
    assert structure.chunk_problems(c, n_lines) == []
    assert structure.occurrence_problems(o, a, c) == []


@pytest.mark.parametrize("path", sorted(SAMPLE_DIR.glob("*.md")), ids=lambda p: p.name)
def test_sample_documents_satisfy_the_invariants(path: Path) -> None:
    doc, blocks = parse_markdown(path.read_bytes(), path.name)
    artifacts = extract_artifacts(blocks)
    chunks = build_chunks(blocks)
    occurrences = build_occurrences(blocks, artifacts, chunks)
    assert occurrences
    check_document(blocks, artifacts, chunks, occurrences, doc["n_lines"])


@pytest.mark.parametrize("src", [GRID, READ, TWO_EXAMPLES])
def test_small_documents_satisfy_the_invariants(src: str) -> None:
    doc, blocks = parse_markdown(src.encode(), "t.md")
    artifacts = extract_artifacts(blocks)
    chunks = build_chunks(blocks)
    check_document(blocks, artifacts, chunks, build_occurrences(blocks, artifacts, chunks), doc["n_lines"])
