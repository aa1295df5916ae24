#!/usr/bin/env python3
"""Check an EDAQA dev/check JSONL file against its Markdown corpus.

Usage:
    python3 scripts/check_dev_qa.py --qa data/dev/openroad_dev.jsonl \
        --corpus /work/shared/corpus/openroad

Checks (each failure is a violation; exit status 1 if any):
  * every line is a JSON object with the fields id, question, answer,
    category, evidence (non-empty list) and atomic_facts (1-4 strings);
  * ids are unique;
  * category is one of parameter_lookup, command_usage, diagnostic, procedure;
  * every evidence doc exists in the corpus folder, start_line/end_line are
    integers with 1 <= start_line <= end_line <= number of lines of the file;
  * every backticked string, every dash-prefixed identifier (``-foo``), every
    snake_case identifier (``set_bar``) and every number in the answer occurs
    in the text of at least one of the cited spans (all cited spans of the
    question are searched together, whitespace-normalised).

Only the Python standard library is used.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

CATEGORIES = ("parameter_lookup", "command_usage", "diagnostic", "procedure")
REQUIRED = ("id", "question", "answer", "category", "evidence", "atomic_facts")

BACKTICK_RE = re.compile(r"`([^`]+)`")
# -foo, -foo_bar, -foo-bar; not the tail of a hyphenated word (timing-driven)
DASH_RE = re.compile(r"(?<![\w\-/.])-[A-Za-z][A-Za-z0-9_]*")
# identifiers with an underscore, e.g. set_wire_rc, FILLER_, db_schema_minor
SNAKE_RE = re.compile(r"(?<![\w\-])[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*")
# plain numbers: 12, 0.6, 8e-5, 1e-12 (not digits glued to letters like M3, 2X)
NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")


def norm_ws(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def numbers_in(text: str) -> set[str]:
    return set(NUMBER_RE.findall(text))


def same_number(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def load_corpus(corpus: Path) -> dict[str, list[str]]:
    docs: dict[str, list[str]] = {}
    for path in sorted(corpus.glob("*.md")):
        docs[path.name] = path.read_text(encoding="utf-8").splitlines()
    return docs


def check_record(rec, lineno, docs, seen_ids, violations):
    def bad(msg):
        rid = rec.get("id", "?") if isinstance(rec, dict) else "?"
        violations.append(f"line {lineno} [{rid}]: {msg}")

    if not isinstance(rec, dict):
        bad("not a JSON object")
        return
    for key in REQUIRED:
        if key not in rec:
            bad(f"missing field '{key}'")
    if any(k not in rec for k in REQUIRED):
        return

    rid = rec["id"]
    if not isinstance(rid, str) or not rid:
        bad("id must be a non-empty string")
    elif rid in seen_ids:
        bad(f"duplicate id (first on line {seen_ids[rid]})")
    else:
        seen_ids[rid] = lineno

    for key in ("question", "answer"):
        if not isinstance(rec[key], str) or not rec[key].strip():
            bad(f"'{key}' must be a non-empty string")

    if rec["category"] not in CATEGORIES:
        bad(f"unknown category '{rec['category']}'")

    facts = rec["atomic_facts"]
    if not isinstance(facts, list) or not 1 <= len(facts) <= 4 or not all(
        isinstance(f, str) and f.strip() for f in facts
    ):
        bad("atomic_facts must be a list of 1-4 non-empty strings")

    evidence = rec["evidence"]
    if not isinstance(evidence, list) or not evidence:
        bad("evidence must be a non-empty list")
        return

    span_lines: list[str] = []
    for i, ev in enumerate(evidence):
        if not isinstance(ev, dict) or set(ev) != {"doc", "start_line", "end_line"}:
            bad(f"evidence[{i}] must have exactly doc, start_line, end_line")
            continue
        doc, start, end = ev["doc"], ev["start_line"], ev["end_line"]
        if doc not in docs:
            bad(f"evidence[{i}]: doc '{doc}' not found in corpus")
            continue
        if not (isinstance(start, int) and isinstance(end, int)):
            bad(f"evidence[{i}]: start_line/end_line must be integers")
            continue
        n = len(docs[doc])
        if not 1 <= start <= end <= n:
            bad(f"evidence[{i}]: lines {start}-{end} outside 1-{n} of {doc} (or start > end)")
            continue
        span_lines.extend(docs[doc][start - 1:end])

    if not span_lines or not isinstance(rec["answer"], str):
        return

    span_text = norm_ws("\n".join(span_lines))
    span_numbers = numbers_in(span_text)
    answer = rec["answer"]

    for tok in BACKTICK_RE.findall(answer):
        t = norm_ws(tok)
        if t and t not in span_text:
            bad(f"backticked `{t}` not found in cited spans")
    for tok in sorted(set(DASH_RE.findall(answer))):
        if tok not in span_text:
            bad(f"option '{tok}' not found in cited spans")
    for tok in sorted(set(SNAKE_RE.findall(answer))):
        if tok not in span_text:
            bad(f"identifier '{tok}' not found in cited spans")
    for num in sorted(numbers_in(answer)):
        if not any(same_number(num, s) for s in span_numbers):
            bad(f"number '{num}' not found in cited spans")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qa", required=True, type=Path, help="QA JSONL file")
    ap.add_argument("--corpus", required=True, type=Path, help="corpus folder with *.md")
    args = ap.parse_args(argv)

    if not args.corpus.is_dir():
        print(f"error: corpus folder {args.corpus} not found", file=sys.stderr)
        return 2
    docs = load_corpus(args.corpus)
    violations: list[str] = []
    seen_ids: dict[str, int] = {}
    n_records = 0
    with args.qa.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            n_records += 1
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError as exc:
                violations.append(f"line {lineno}: invalid JSON ({exc})")
                continue
            check_record(rec, lineno, docs, seen_ids, violations)

    for v in violations:
        print(v)
    status = "FAIL" if violations else "OK"
    print(f"{status}: {args.qa} - {n_records} records, {len(violations)} violations")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
