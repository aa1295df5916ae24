"""The OpenROAD dev sets (``data/dev/openroad_dev*.jsonl``) against the 2026 manuals they cite.

Every retrieval figure of these sets is a line-overlap measure, so a span that points past the
end of its file, at a blank line, or into a file that is not in the corpus would be scored
silently wrong. Checked here: every line loads with the evaluation's own loader, ids are
unique across the three sets, every span lies inside its document and shows text, and a
constraint-analysis question's ``category`` is its set's.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from edaqa_pipeline.evaluation.qa import load_qa

DEV = Path(__file__).resolve().parents[1] / "data" / "dev"
CORPUS = Path(__file__).resolve().parents[2] / "shared/corpus/openroad"
SETS = ["openroad_dev.jsonl", "openroad_dev_check.jsonl", "openroad_dev_constraints.jsonl"]


@functools.cache
def _lines(doc: str) -> tuple[str, ...]:
    return tuple((CORPUS / doc).read_text(encoding="utf-8").splitlines())


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DEV / name).read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("name", SETS)
def test_dev_set_loads_with_the_evaluation_loader(name: str) -> None:
    items = load_qa(DEV / name, "auto", None)
    assert len(items) == len(_rows(name)) >= 30
    assert all(item.gold_docs for item in items)


def test_ids_are_unique_across_the_sets() -> None:
    ids = [row["id"] for name in SETS for row in _rows(name)]
    assert len(ids) == len(set(ids))


def test_constraint_set_is_one_category_over_many_manuals() -> None:
    rows = _rows("openroad_dev_constraints.jsonl")
    assert {row["category"] for row in rows} == {"constraint_analysis"}
    assert len({span["doc"] for row in rows for span in row["evidence"]}) >= 14


@pytest.mark.skipif(not CORPUS.is_dir(), reason="needs ../shared/corpus/openroad")
@pytest.mark.parametrize("name", SETS)
def test_every_span_lies_inside_its_manual_and_shows_text(name: str) -> None:
    bad = []
    for row in _rows(name):
        for span in row["evidence"]:
            path = CORPUS / span["doc"]
            if not path.is_file():
                bad.append(f"{row['id']}: no file {span['doc']}")
                continue
            lines = _lines(span["doc"])
            start, end = span["start_line"], span["end_line"]
            if not 1 <= start <= end <= len(lines):
                bad.append(f"{row['id']}: {span['doc']} {start}-{end} outside 1-{len(lines)}")
            elif not any(line.strip() for line in lines[start - 1:end]):
                bad.append(f"{row['id']}: {span['doc']} {start}-{end} is blank")
    assert not bad, bad
