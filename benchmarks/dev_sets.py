"""Dev QA sets from public benchmarks, written into /tmp (never into the repository).

Why: the function-aware encoder and its retriever are tuned on dev data only. ORD-MMBench's
questions come with reference chunk ids of the benchmark's own chunking; this script turns
them into the ORD-QA format that ``edaqa eval`` reads (``reference`` + ``reference_content``,
scored by ``ref_recall``), plus a source map (chunk-id prefix -> corpus document, for the
document metrics) derived by line overlap with a corpus folder. The benchmark text carries no
license, so the output goes to a folder outside the repository and is never committed.

    .venv/bin/python benchmarks/dev_sets.py mmbench [--out /tmp/edaqa_dev]
        [--corpus ../shared/corpus/openroad-2024] [--types "Functionality,Error Traceback" | --all]

    .venv/bin/python benchmarks/dev_sets.py eda-corpus [--out /tmp/edaqa_dev]

EDA-Corpus QA (196 questions, CC BY 4.0) has reference answers but no reference chunks of a
corpus we index: it is a dev set for the answer metrics only (ROUGE-L, BLEU), written in the
ORD-QA format with empty references.

ORD-MMBench is multi-modal; its "text questions" (the default) are the two types whose
question text is meant to stand without the screenshot (Functionality, Error Traceback:
67 of 120); ``--all`` keeps every question (Layout and GUI ones often need the image).

ORD-QA (``ord-qa*``) is the TEST set: this script refuses to read it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO.parent / "shared" / "benchmarks"
DEFAULT_OUT = Path("/tmp/edaqa_dev")
TEXT_TYPES = ("Functionality", "Error Traceback")


class DevSetError(ValueError):
    """An input that cannot be converted; the message names the file and the problem."""


def _refuse_test_set(path: Path) -> None:
    if path.name.startswith("ord-qa"):
        raise DevSetError(f"{path}: ORD-QA is the test set; dev sets are never built from it")


def _refuse_repo(path: Path) -> None:
    resolved = path.resolve()
    if resolved == REPO or REPO in resolved.parents:
        raise DevSetError(f"{path}: benchmark text must not be written into the repository {REPO}")


def chunk_texts(path: Path) -> dict[str, str]:
    """Chunk id -> chunk text (with its ``id:`` header line) of an ORD-style chunk file:
    a list of ``{"source", "knowledge": [{"content": "id:<chunk id>\\n..."}]}``."""
    _refuse_test_set(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DevSetError(f"{path}: cannot read the chunk file ({exc})") from exc
    if not isinstance(data, list):
        raise DevSetError(f"{path}: expected a JSON list of sources")
    out: dict[str, str] = {}
    for n, source in enumerate(data):
        for piece in source.get("knowledge") or []:
            content = piece.get("content") if isinstance(piece, dict) else None
            if not isinstance(content, str) or not content.startswith("id:"):
                raise DevSetError(f"{path}: source #{n} has a chunk without an 'id:' header")
            chunk_id = content.split("\n", 1)[0][3:].strip()
            out[chunk_id] = content
    return out


def _lines(text: str) -> set[str]:
    return {" ".join(line.split()) for line in text.splitlines()
            if len(line.split()) >= 3 and not line.lstrip().startswith("#")}


def source_map(chunks: dict[str, str], corpus: Path) -> dict[str, str]:
    """Chunk-id prefix -> the corpus document sharing most of its chunks' lines (a prefix whose
    best document shares under a quarter of its lines is left out: not in this corpus)."""
    docs = {p.name: _lines(p.read_text(encoding="utf-8", errors="replace"))
            for p in sorted(corpus.glob("*.md"))}
    if not docs:
        raise DevSetError(f"{corpus}: no Markdown documents to map the chunks onto")
    by_prefix: dict[str, set[str]] = {}
    for chunk_id, text in chunks.items():
        prefix = chunk_id.rpartition("_")[0] if chunk_id.rpartition("_")[2].isdigit() else chunk_id
        by_prefix.setdefault(prefix, set()).update(_lines(text))
    out: dict[str, str] = {}
    for prefix, lines in sorted(by_prefix.items()):
        if not lines:
            continue
        best, overlap = max(((name, len(lines & doc)) for name, doc in docs.items()),
                            key=lambda x: (x[1], x[0]))
        if overlap * 4 >= len(lines):
            out[prefix] = best
    return out


def jsonl_records(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, record) of each non-empty line; invalid JSON names the file and line."""
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield line_no, json.loads(line)
            except json.JSONDecodeError as exc:
                raise DevSetError(f"{path}:{line_no}: invalid JSON ({exc.msg})") from exc


def mmbench_records(qa_path: Path, chunks: dict[str, str], types: tuple[str, ...] | None) -> list[dict]:
    """ORD-MMBench questions in the ORD-QA format (``reference_content`` filled in)."""
    _refuse_test_set(qa_path)
    out = []
    for line_no, rec in jsonl_records(qa_path):
        if types is not None and rec.get("type") not in types:
            continue
        refs = rec.get("reference") or []
        missing = [r for r in refs if r not in chunks]
        if missing:
            raise DevSetError(f"{qa_path}:{line_no}: reference {missing[0]!r} is not in the chunk file")
        out.append({"id": f"mmb-{rec['id']}", "question": rec["question"], "answer": rec["answer"],
                    "type": rec.get("type", ""), "reference": refs,
                    "reference_content": [chunks[r] for r in refs]})
    return out


def build_mmbench(out_dir: Path, corpus: Path, types: tuple[str, ...] | None) -> dict[str, object]:
    _refuse_repo(out_dir)
    chunks = chunk_texts(BENCHMARKS / "ord-mmbench_openroad_document_chunks.json")
    records = mmbench_records(BENCHMARKS / "ord-mmbench.jsonl", chunks, types)
    smap = source_map(chunks, corpus)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = "ord-mmbench_text" if types == TEXT_TYPES else ("ord-mmbench_all" if types is None else "ord-mmbench_sel")
    qa_file, map_file = out_dir / f"{name}.ordqa.jsonl", out_dir / "ord-mmbench.source_map.json"
    qa_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    map_file.write_text(json.dumps({"_about": f"derived by line overlap with {corpus}", **smap},
                                   indent=1, sort_keys=True) + "\n", encoding="utf-8")
    refs = [r for rec in records for r in rec["reference"]]
    mapped = sum(1 for r in refs if (r.rpartition("_")[0] or r) in smap)
    return {"qa": str(qa_file), "source_map": str(map_file), "questions": len(records),
            "types": dict(Counter(r["type"] for r in records)), "references": len(refs),
            "references_in_corpus_map": mapped}


def build_eda_corpus(out_dir: Path) -> dict[str, object]:
    """EDA-Corpus QA in the ORD-QA format, answers only (``reference`` empty)."""
    _refuse_repo(out_dir)
    source = BENCHMARKS / "eda-corpus-qa.jsonl"
    records = [{"id": f"eda-{rec['id']}", "question": rec["question"], "answer": rec["answer"],
                "type": rec.get("category") or "none", "reference": [], "reference_content": []}
               for _, rec in jsonl_records(source)]
    out_dir.mkdir(parents=True, exist_ok=True)
    qa_file = out_dir / "eda-corpus-qa.ordqa.jsonl"
    qa_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return {"qa": str(qa_file), "questions": len(records),
            "types": dict(Counter(r["type"] for r in records))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", choices=["mmbench", "eda-corpus"])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus" / "openroad-2024")
    parser.add_argument("--types", default=",".join(TEXT_TYPES))
    parser.add_argument("--all", action="store_true", help="every question type")
    args = parser.parse_args(argv)
    types = None if args.all else tuple(t.strip() for t in args.types.split(",") if t.strip())
    try:
        summary = (build_eda_corpus(args.out) if args.dataset == "eda-corpus"
                   else build_mmbench(args.out, args.corpus, types))
    except DevSetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
