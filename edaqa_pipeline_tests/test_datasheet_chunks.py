"""Datasheet chunk ids: unique and stable whatever the whitespace of the text.

``stable_id`` hashes whitespace-normalised text, so the duplicate counter that tells equal
chunks apart must count normalised text too: the IHP I/O datasheet repeats one heading on
several pages, once set as "Temp 25.00" and once as "Temp\\n25.00", and the two chunks used to
get one id, failing ``datasheet_chunks`` (``chunks have page and bbox: chunk ids repeat``).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from edaqa_pipeline.extraction.datasheets.chunks import datasheet_chunks
from edaqa_pipeline.model import stable_id

WORDS = st.lists(st.sampled_from(["Voltage", "1.20,", "Temp", "25.00", "Truth", "Table", "pad", "VDD"]),
                 min_size=1, max_size=6)
SPACE = st.sampled_from([" ", "  ", "\t", " \n", "\n"])


@st.composite
def variants(draw: Any) -> list[str]:
    """Several spellings of one text that differ only in whitespace."""
    words = draw(WORDS)
    out = []
    for _ in range(draw(st.integers(min_value=2, max_value=5))):
        gaps = [draw(SPACE) for _ in words[1:]]
        text = words[0] + "".join(g + w for g, w in zip(gaps, words[1:], strict=True))
        out.append(draw(SPACE).strip(" ") + text + draw(SPACE).rstrip("\n"))
    return out


def _blocks(texts: list[str], kind: str) -> list[dict[str, Any]]:
    """One block per page, so every text becomes a chunk of its own."""
    return [
        {"block_id": stable_id("blk", "d.pdf", i), "document": "d.pdf", "ordinal": i, "kind": kind,
         "section_path": ["1 Intro"], "heading_level": 2 if kind == "heading" else 0, "text": text,
         "raw": text, "page": i + 1, "bbox": [0.0, float(i), 10.0, float(i) + 5.0], "meta": "{}"}
        for i, text in enumerate(texts)
    ]


@settings(max_examples=60, deadline=None)
@given(texts=variants(), kind=st.sampled_from(["paragraph", "list"]))
def test_chunk_ids_unique_over_whitespace_variants(texts: list[str], kind: str) -> None:
    chunks = datasheet_chunks(_blocks(texts, kind))
    ids = [c["chunk_id"] for c in chunks]
    assert len(ids) == len(set(ids)), [c["text"] for c in chunks]
    assert [c["chunk_id"] for c in datasheet_chunks(_blocks(texts, kind))] == ids  # stable


@settings(max_examples=40, deadline=None)
@given(texts=variants())
def test_heading_chunks_unique_over_whitespace_variants(texts: list[str]) -> None:
    """The IHP case: a heading repeated with other line breaks, each followed by prose."""
    blocks = []
    for i, text in enumerate(texts):
        heading, body = _blocks([text, "Truth Table"], "heading"), None
        body = {**heading[1], "kind": "paragraph", "heading_level": 0}
        heading = heading[0]
        for b in (heading, body):
            b.update(page=i + 1, block_id=stable_id("blk", b["block_id"], i), ordinal=len(blocks))
            blocks.append(b)
    ids = [c["chunk_id"] for c in datasheet_chunks(blocks)]
    assert len(ids) == len(set(ids)) == len(texts)


def test_the_ihp_heading_case() -> None:
    texts = ["sg13g2_io_typ_1p2V_3p3V_25C, Voltage 1.20, Temp 25.00",
             "sg13g2_io_typ_1p2V_3p3V_25C, Voltage 1.20, Temp\n25.00"]
    chunks = datasheet_chunks(_blocks(texts, "paragraph"))
    assert len(chunks) == 2 and chunks[0]["chunk_id"] != chunks[1]["chunk_id"]
