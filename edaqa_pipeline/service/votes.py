"""Readers' votes on answers, kept in the storage root, and exported as a QA file.

The answer page lets a reader mark an answer helpful or not. Each vote is one JSON line of
``STORAGE/feedback/votes.jsonl``: ``time`` (UTC, ISO 8601), ``question``, ``method``,
``answer``, ``citations`` (the answer's citations, ``doc.md:L3-L5`` / ``doc.pdf:p2``) and
``vote`` (``up`` or ``down``). Nothing about the person who voted is kept (no address, no
browser). The file is only appended to: each record is one ``write`` to a file opened with
``O_APPEND`` under an exclusive ``fcntl`` lock, so votes sent at once never mix or lose one
another, and a reader that takes the shared lock never sees half a line.

``export_votes`` turns the votes into a QA file that ``evaluation.qa.load_qa`` reads (the
``edaqa`` format), one record per distinct (question, answer, citations), in a fixed order
(by question, then id) with ids derived from the content, so re-exporting a grown file keeps
the ids it had:

* more up- than down-votes: the answer is gold: ``answer`` is the voted answer and
  ``evidence`` its citations as gold spans (``category`` ``voted_up``);
* otherwise (``voted_down``; ``voted_mixed`` on a tie) the record keeps the question with no
  reference answer and no gold spans, which every metric skips, and keeps the rejected answer
  and citations under ``rejected`` for whoever writes the right one.

Every record carries ``vote`` (its label), ``votes`` (``{"up", "down"}`` counts) and
``methods`` (those that gave the answer).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from edaqa_pipeline.service.errors import ServiceError
from edaqa_pipeline.service.requests import MAX_QUESTION_CHARS, check_encodable

VOTES_FILE = Path("feedback") / "votes.jsonl"
VOTES = ("up", "down")
FIELDS = ("question", "method", "answer", "citations", "vote")
MAX_ANSWER_CHARS = 20_000
MAX_CITATIONS = 100
MAX_CITATION_CHARS = 500
CITATION = re.compile(r"(?P<doc>.+):(?:L(?P<start>[1-9]\d*)(?:-L(?P<end>[1-9]\d*))?|p(?P<page>[1-9]\d*))")


def votes_path(storage: str | Path) -> Path:
    return Path(storage) / VOTES_FILE


def _text(body: dict[str, Any], name: str, limit: int) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise ServiceError(f"'{name}' must be a non-empty string of at most {limit} characters",
                           param=name)
    check_encodable(value, name)
    return value


def check_vote(body: Any) -> dict[str, Any]:
    """The vote fields of a request ``body`` (module docstring), or ``ServiceError`` (400)."""
    if not isinstance(body, dict):
        raise ServiceError("a vote must be a JSON object")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise ServiceError(f"unknown field(s) {', '.join(map(repr, unknown))}; a vote has "
                           f"{', '.join(FIELDS)}", param=unknown[0])
    citations = body.get("citations", [])
    if (not isinstance(citations, list) or len(citations) > MAX_CITATIONS
            or not all(isinstance(c, str) and len(c) <= MAX_CITATION_CHARS
                       and CITATION.fullmatch(c) for c in citations)):
        raise ServiceError(f"'citations' must be a list of at most {MAX_CITATIONS} citations "
                           "such as 'doc.md:L3-L5' or 'doc.pdf:p2'", param="citations")
    if body.get("vote") not in VOTES:
        raise ServiceError("'vote' must be 'up' or 'down'", param="vote")
    return {"question": _text(body, "question", MAX_QUESTION_CHARS).strip(),
            "method": _text(body, "method", 200), "answer": _text(body, "answer", MAX_ANSWER_CHARS),
            "citations": list(citations), "vote": body["vote"]}


@contextmanager
def _locked(path: Path, flags: int, lock: int) -> Iterator[int]:
    fd = os.open(path, flags, 0o644)
    try:
        fcntl.flock(fd, lock)
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def record_vote(storage: str | Path, body: Any) -> dict[str, Any]:
    """Check ``body`` and append it, stamped with the UTC time, to the votes file; returns
    the record as written."""
    record = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), **check_vote(body)}
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
    path = votes_path(storage)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, fcntl.LOCK_EX) as fd:
        view = memoryview(line)
        while view:  # one write in practice; a short write is finished under the same lock
            view = view[os.write(fd, view):]
    return record


def read_votes(storage: str | Path) -> list[dict[str, Any]]:
    """The votes recorded under ``storage``, in file order (none when there is no file)."""
    path = votes_path(storage)
    if not path.is_file():
        return []
    with _locked(path, os.O_RDONLY, fcntl.LOCK_SH) as fd:
        data = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
    votes = []
    # records end in "\n" only: text copied from a PDF may hold U+2028 / U+0085, which
    # splitlines() would also split on
    for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            fields = {k: v for k, v in record.items() if k != "time"}
            votes.append({"time": str(record["time"]), **check_vote(fields)})
        except (ValueError, KeyError, TypeError, AttributeError, ServiceError) as exc:
            raise ServiceError(f"{path}:{number}: not a vote record ({exc})") from None
    return votes


def gold_span(citation: str) -> dict[str, Any]:
    """The QA file's evidence entry of a citation (``doc.md:L3-L5`` or ``doc.pdf:p2``)."""
    match = CITATION.fullmatch(citation)
    if match is None:
        raise ServiceError(f"{citation!r} is not a citation", param="citations")
    if match["page"]:
        return {"doc": match["doc"], "page": int(match["page"])}
    start = int(match["start"])
    end = int(match["end"] or start)
    return {"doc": match["doc"], "start_line": min(start, end), "end_line": max(start, end)}


def export_records(votes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """QA records (module docstring) of ``votes``, sorted by question then id."""
    from edaqa_pipeline.model import normalise_ws, stable_id

    # answers that differ only in white space are one answer (as their ids are); the text
    # kept is its most voted spelling (then the smallest), whatever order the votes came in
    groups: dict[tuple[str, str, tuple[str, ...]], dict[str, Any]] = {}
    for vote in votes:
        citations = tuple(vote["citations"])
        key = (normalise_ws(vote["question"]), normalise_ws(vote["answer"]), citations)
        group = groups.setdefault(key, {"up": 0, "down": 0, "methods": set(), "texts": Counter()})
        group[vote["vote"]] += 1
        group["methods"].add(vote["method"])
        group["texts"][vote["question"], vote["answer"]] += 1
    records = []
    for (_, _, citations), group in groups.items():
        question, answer = min(group["texts"], key=lambda t: (-group["texts"][t], t))
        up, down = group["up"], group["down"]
        label = "up" if up > down else "down" if down > up else "mixed"
        record: dict[str, Any] = {"id": stable_id("vote", question, answer, *citations),
                                  "question": question}
        if label == "up":
            record.update(answer=answer, evidence=[gold_span(c) for c in citations])
        else:
            record.update(answer="", evidence=[],
                          rejected={"answer": answer, "citations": list(citations)})
        record.update(category=f"voted_{label}", vote=label, votes={"up": up, "down": down},
                      methods=sorted(group["methods"]))
        records.append(record)
    return sorted(records, key=lambda r: (r["question"], r["id"]))


def export_votes(storage: str | Path, out: str | Path) -> list[dict[str, Any]]:
    """Write the votes under ``storage`` to the QA file ``out`` (JSONL); returns its records."""
    records = export_records(read_votes(storage))
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n"
                            for r in records), encoding="utf-8")
    return records
