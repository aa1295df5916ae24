"""Evaluation layer: the QA loaders (EDA-QA and ORD-QA formats, source maps, errors)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from edaqa_pipeline.evaluation.qa import (
    QAFormatError,
    QAItem,
    detect_format,
    load_qa,
    load_source_map,
    reference_prefix,
)

BENCH = Path("/work/shared/benchmarks")


# --- loaders --------------------------------------------------------------------------------


def write_lines(path: Path, records: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_load_edaqa(tmp_path: Path):
    f = write_lines(
        tmp_path / "q.jsonl",
        [
            {
                "id": 7,
                "question": "  How?\n",
                "answer": "Like this.",
                "category": "flow",
                "evidence": [
                    {"doc": "grt.md", "start_line": 3, "end_line": 9},
                    {"doc": "sheet.pdf", "page": 2},
                    {"doc": "grt.md", "start_line": 20, "end_line": 20},
                ],
                "atomic_facts": ["Fact one.", " Fact two. "],
            },
            "",
            {"id": "b", "question": "Why?", "answer": "Because."},
        ],
    )
    a, b = load_qa(f)
    assert a == QAItem(
        id="7",
        question="How?",
        answer="Like this.",
        category="flow",
        gold_docs=("grt.md", "sheet.pdf"),
        gold_spans=(("grt.md", 3, 9, None), ("sheet.pdf", None, None, 2), ("grt.md", 20, 20, None)),
        atomic_facts=("Fact one.", "Fact two."),
    )
    assert b == QAItem(id="b", question="Why?", answer="Because.")
    assert b.category == "all" and b.gold_docs == () and b.ref_passages == ()


def test_load_ordqa(tmp_path: Path):
    smap = tmp_path / "map.json"
    smap.write_text(
        json.dumps({"_about": "comment", "global_routing": "grt.md", "scripts": "orfs.md"})
    )
    f = write_lines(
        tmp_path / "o.jsonl",
        [
            {
                "id": 1,
                "question": " Q?\n",
                "answer": " Use it: \\n```tcl\\ncmd\\n```\n",
                "type": "functionality",
                "reference": ["global_routing_6", "scripts_12", "global_routing_7"],
                "reference_content": [
                    "id:global_routing_6\n### H\nbody",
                    "id:scripts_12\ntext",
                    "id:global_routing_7\nmore",
                ],
            }
        ],
    )
    (item,) = load_qa(f, "auto", source_map=smap)
    assert item.question == "Q?"
    assert item.answer == "Use it: \n```tcl\ncmd\n```"  # literal \n -> newline, then stripped
    assert item.category == "functionality"
    assert item.gold_docs == ("grt.md", "orfs.md")
    assert item.ref_passages == ("### H\nbody", "text", "more")
    assert load_source_map(smap) == {"global_routing": "grt.md", "scripts": "orfs.md"}
    (no_map,) = load_qa(f, "ordqa")
    assert no_map.gold_docs == () and len(no_map.ref_passages) == 3
    assert reference_prefix("chip-level_connections_3") == "chip-level_connections"
    assert reference_prefix("nosuffix") == "nosuffix"
    assert detect_format({"reference": []}) == "ordqa"
    assert detect_format({"question": "q"}) == "edaqa"


@pytest.mark.parametrize(
    ("lines", "needle"),
    [
        (['{"id": 1, "question": "q", "answer": "a"}', "{not json"], ":2: invalid JSON"),
        (['{"id": 1, "answer": "a"}'], ":1: missing required key 'question'"),
        (
            [
                '{"id": 1, "question": "q", "answer": "a"}',
                '{"id": 1, "question": "r", "answer": "b"}',
            ],
            ":2: duplicate id '1'",
        ),
        (
            [
                '{"id": 1, "question": "q", "answer": "a"}',
                '{"id": 2, "question": "q", "answer": "a", "reference": []}',
            ],
            ":2: record looks like 'ordqa'",
        ),
        (
            [
                '{"id": 1, "question": "q", "answer": "a", "evidence": [{"doc": "x.md", "start_line": 5, "end_line": 2}]}'
            ],
            ":1: evidence end_line 2 < start_line 5",
        ),
        (
            [
                '{"id": 1, "question": "q", "answer": "a", "evidence": [{"start_line": 1, "end_line": 2}]}'
            ],
            ":1: each evidence entry",
        ),
        (["[1, 2]"], ":1: expected a JSON object"),
        (['{"id": 1, "question": "  ", "answer": "a"}'], ":1: 'question' is empty"),
        (['{"question": "q", "answer": "a"}'], ":1: missing or invalid 'id'"),
    ],
)
def test_loader_errors_name_file_and_line(tmp_path: Path, lines: list[str], needle: str):
    f = write_lines(tmp_path / "bad.jsonl", lines)
    with pytest.raises(QAFormatError) as exc:
        load_qa(f)
    assert str(f) in str(exc.value)
    assert needle in str(exc.value)


def test_header_comments_are_skipped_and_errors_keep_their_line_numbers(tmp_path: Path):
    header = ["# written by hand from the manuals before any retriever ran on it", "#"]
    ok = write_lines(tmp_path / "ok.jsonl", [*header, '{"id": "u1", "question": "q", "answer": "a"}'])
    assert [item.id for item in load_qa(ok)] == ["u1"]
    bad = write_lines(tmp_path / "bad.jsonl", [*header, '{"id": "u1", "question": "q"'])
    with pytest.raises(QAFormatError, match=":3: invalid JSON"):
        load_qa(bad)


def test_loader_rejects_unknown_format_and_missing_file(tmp_path: Path):
    with pytest.raises(ValueError, match="unknown QA format"):
        load_qa(tmp_path / "x.jsonl", "csv")
    with pytest.raises(QAFormatError, match="no such QA file"):
        load_qa(tmp_path / "x.jsonl")


@pytest.mark.skipif(not (BENCH / "ord-qa.jsonl").is_file(), reason="ORD-QA benchmark not present")
def test_load_real_ordqa(caplog: pytest.LogCaptureFixture):
    items = load_qa(BENCH / "ord-qa.jsonl", "auto", source_map=BENCH / "ord-qa.source_map.json")
    assert len(items) == 90
    assert not [r for r in caplog.records if "no entry in the source map" in r.getMessage()]
    assert all(it.gold_docs for it in items)  # every reference prefix is mapped
    counts = Counter(it.category for it in items)
    assert counts == {"functionality": 46, "vlsi_flow": 22, "gui&installation&test": 22}
    smap = load_source_map(BENCH / "ord-qa.source_map.json")
    for line in (BENCH / "ord-qa.jsonl").read_text().splitlines():
        assert all(reference_prefix(r) in smap for r in json.loads(line)["reference"])
    assert all(
        it.ref_passages and not any(p.startswith("id:") for p in it.ref_passages) for it in items
    )
    assert not any("\\n" in it.answer for it in items)
    assert items[0].gold_docs == ("ppl.md", "grt.md")
    corpus = BENCH.parent / "corpus" / "openroad-2024"
    if corpus.is_dir():
        assert all((corpus / d).is_file() for it in items for d in it.gold_docs)
