"""Votes of the answer page: checked, appended to ``feedback/votes.jsonl``, and exported by the
real ``edaqa eval --export-votes`` as a QA file that the evaluation's loader reads back."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from edaqa_pipeline.evaluation.qa import load_qa
from edaqa_pipeline.service import ServiceError, record_vote
from edaqa_pipeline.service.votes import read_votes, votes_path

GOLD_Q = "What is the default value of the -starts_with option of define_power_grid?"
GOLD_A = "Default: `GROUND`. [pdn.md:L31]"


def vote(storage: Path, vote: str, question: str = GOLD_Q, answer: str = GOLD_A,
         citations: list[str] | None = None, method: str = "bm25") -> dict[str, Any]:
    return record_vote(storage, {"question": question, "method": method, "answer": answer,
                                 "citations": ["pdn.md:L31"] if citations is None else citations,
                                 "vote": vote})


def export(storage: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "edaqa_pipeline.cli", "eval", "--storage",
                           str(storage), "--export-votes", str(out)],
                          capture_output=True, text=True, timeout=120)


def test_a_vote_is_one_line_with_its_fields_and_nothing_else(tmp_path: Path) -> None:
    record = vote(tmp_path, "up")
    lines = votes_path(tmp_path).read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0]) == record
    assert set(record) == {"time", "question", "method", "answer", "citations", "vote"}
    assert record["time"].endswith("+00:00") and record["citations"] == ["pdn.md:L31"]
    vote(tmp_path, "down", citations=[])
    assert [v["vote"] for v in read_votes(tmp_path)] == ["up", "down"]


@pytest.mark.parametrize("body, param", [
    ({"vote": "sideways"}, "vote"),
    ({"vote": None}, "vote"),
    ({"question": "  "}, "question"),
    ({"question": "q" * 2001}, "question"),
    ({"answer": 3}, "answer"),
    ({"method": ""}, "method"),
    ({"citations": "pdn.md:L31"}, "citations"),
    ({"citations": ["pdn.md"]}, "citations"),
    ({"citations": ["pdn.md:L0"]}, "citations"),
    ({"citations": ["pdn.md:L1"] * 101}, "citations"),
    ({"user_agent": "x"}, "user_agent"),
])  # fmt: skip
def test_bad_votes_are_refused_and_not_written(tmp_path: Path, body: dict[str, Any],
                                               param: str) -> None:
    good = {"question": GOLD_Q, "method": "bm25", "answer": GOLD_A, "citations": [], "vote": "up"}
    with pytest.raises(ServiceError) as caught:
        record_vote(tmp_path, {**good, **body})
    assert caught.value.status == 400 and caught.value.param == param
    assert not votes_path(tmp_path).exists()


def test_export_round_trips_through_the_qa_loader(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    vote(storage, "up")
    vote(storage, "up", answer=GOLD_A.replace(" ", "  "), method="edaqa")  # same answer, spaced
    vote(storage, "down")
    vote(storage, "down", question="How do I route?", answer="Use route_design.",
         citations=["routing.md:L10-L12"])
    vote(storage, "up", question="How do I route?", answer="Run route_design.",
         citations=["routing.md:L10-L12", "sheet.pdf:p2"])
    vote(storage, "up", question="Which capacitor?", answer="1 uF.", citations=["sheet.pdf:p2"])
    vote(storage, "down", question="Which capacitor?", answer="1 uF.", citations=["sheet.pdf:p2"])

    out = tmp_path / "qa" / "votes_qa.jsonl"
    result = export(storage, out)
    assert result.returncode == 0, result.stderr
    assert "4 voted answers, 2 up-voted as gold" in result.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    items = load_qa(out)  # the evaluation's own loader, format detected
    assert [i.id for i in items] == [r["id"] for r in records]
    assert [i.question for i in items] == ["How do I route?", "How do I route?",
                                           GOLD_Q, "Which capacitor?"]
    by_answer = {(r["question"], r["answer"] or r["rejected"]["answer"]): (r, i)
                 for r, i in zip(records, items, strict=True)}

    gold, item = by_answer[(GOLD_Q, GOLD_A)]
    assert gold["vote"] == "up" and gold["votes"] == {"up": 2, "down": 1}
    assert gold["methods"] == ["bm25", "edaqa"] and item.category == "voted_up"
    assert item.answer == GOLD_A and item.gold_spans == (("pdn.md", 31, 31, None),)

    routed, item = by_answer[("How do I route?", "Run route_design.")]
    assert routed["vote"] == "up" and routed["votes"] == {"up": 1, "down": 0}
    assert item.gold_spans == (("routing.md", 10, 12, None), ("sheet.pdf", None, None, 2))
    assert item.gold_docs == ("routing.md", "sheet.pdf")

    for key, label in ((("How do I route?", "Use route_design."), "down"),
                       (("Which capacitor?", "1 uF."), "mixed")):
        rejected, item = by_answer[key]
        assert rejected["vote"] == label and item.category == f"voted_{label}"
        assert item.answer == "" and item.gold_spans == ()  # no reference: metrics skip it
        assert rejected["rejected"]["answer"] == key[1]

    # the order and ids do not depend on the order the votes were written in
    lines = votes_path(storage).read_text().splitlines()
    random.Random(7).shuffle(lines)
    shuffled = tmp_path / "shuffled"
    votes_path(shuffled).parent.mkdir(parents=True)
    votes_path(shuffled).write_text("\n".join(lines) + "\n")
    again = tmp_path / "again.jsonl"
    assert export(shuffled, again).returncode == 0
    assert again.read_bytes() == out.read_bytes()


def test_export_of_a_damaged_votes_file_names_the_line(tmp_path: Path) -> None:
    vote(tmp_path, "up")
    with votes_path(tmp_path).open("a") as fh:
        fh.write('{"time": "t", "vote": "up"\n')
    result = export(tmp_path, tmp_path / "out.jsonl")
    assert result.returncode == 2 and "votes.jsonl:2: not a vote record" in result.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_a_vote_with_unicode_line_separators_exports(tmp_path: Path) -> None:
    vote(tmp_path, "up", question="What is the default\u2028of -starts_with\u0085in define_power_grid?")
    vote(tmp_path, "up")
    assert len(read_votes(tmp_path)) == 2
    result = export(tmp_path, tmp_path / "out.jsonl")
    assert result.returncode == 0, result.stderr
    assert len(load_qa(tmp_path / "out.jsonl")) == 2


def test_export_without_votes_writes_an_empty_qa_file(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = export(tmp_path, out)
    assert result.returncode == 0 and out.read_text() == "" and load_qa(out) == []
