"""Question sets for evaluation: one ``QAItem`` record whatever the file format.

Two formats exist. The project's own ``edaqa`` JSONL names gold evidence as line spans (or PDF
pages) in corpus documents; ORD-QA (``ordqa``) names it as chunk ids of the benchmark's own
chunking, plus the chunk texts. The metrics should not care which one a question came from, so
both are normalised here into ``QAItem``: gold documents, gold spans and reference passages are
filled where the format provides them and left empty otherwise, and each metric applies only to
questions that have what it needs.

Malformed input fails loudly with the file and the 1-based line number, because a silently
skipped question changes every number in the report.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from edaqa_pipeline.corpus.releases import release_key

log = logging.getLogger(__name__)

QAFormat = Literal["auto", "edaqa", "ordqa"]
QA_FORMATS: tuple[str, ...] = ("auto", "edaqa", "ordqa")

# (doc, start_line, end_line, page): Markdown spans have lines and page None, PDF spans a page.
GoldSpan = tuple[str, int | None, int | None, int | None]


class QAFormatError(ValueError):
    """A QA file or source map that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class QAItem:
    """One benchmark question, normalised across formats.

    ``gold_docs`` are paths relative to the corpus root (what ``EvidenceItem.doc`` holds);
    ``ref_passages`` are reference texts without ORD-QA's ``id:`` header line.
    """

    id: str
    question: str
    answer: str
    category: str = "all"
    gold_docs: tuple[str, ...] = ()
    gold_spans: tuple[GoldSpan, ...] = ()
    ref_passages: tuple[str, ...] = ()
    atomic_facts: tuple[str, ...] = ()
    release: str | None = None  # the release whose lines answer it (a storage with releases)


def _fail(path: Path, line_no: int | None, msg: str) -> QAFormatError:
    where = f"{path}:{line_no}" if line_no is not None else str(path)
    return QAFormatError(f"{where}: {msg}")


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a JSONL file; lines starting
    with ``#`` are comments (a QA file's header says how and from what it was written)."""
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise _fail(
                    path, line_no, f"invalid JSON ({exc.msg} at column {exc.colno})"
                ) from exc
            if not isinstance(obj, dict):
                raise _fail(path, line_no, f"expected a JSON object, got {type(obj).__name__}")
            yield line_no, obj


def detect_format(record: dict[str, Any]) -> Literal["edaqa", "ordqa"]:
    """ORD-QA records carry ``reference``/``reference_content``; everything else is edaqa."""
    if "reference_content" in record or "reference" in record:
        return "ordqa"
    return "edaqa"


def load_source_map(path: str | Path) -> dict[str, str]:
    """Read an ORD-QA source map: reference-id prefix -> gold document (keys "_..." are comments)."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise _fail(p, exc.lineno, f"invalid JSON ({exc.msg})") from exc
    if not isinstance(raw, dict):
        raise _fail(p, None, "a source map must be a JSON object")
    out: dict[str, str] = {}
    for key, value in raw.items():
        if key.startswith("_"):
            continue
        if not isinstance(value, str) or not value:
            raise _fail(p, None, f"source map value for {key!r} must be a non-empty string")
        out[key] = value
    return out


def reference_prefix(ref_id: str) -> str:
    """The document part of an ORD-QA chunk id: everything before its last ``_N``."""
    head, sep, tail = ref_id.rpartition("_")
    return head if sep and tail.isdigit() else ref_id


def strip_id_header(text: str) -> str:
    """Drop ORD-QA's leading ``id:<chunk id>`` line, which is not part of the passage."""
    if text.startswith("id:"):
        _, _, rest = text.partition("\n")
        return rest
    return text


def _req_str(obj: dict[str, Any], key: str, path: Path, line_no: int) -> str:
    if key not in obj:
        raise _fail(path, line_no, f"missing required key {key!r}")
    value = obj[key]
    if not isinstance(value, str):
        raise _fail(path, line_no, f"{key!r} must be a string")
    return value


def _question(obj: dict[str, Any], path: Path, line_no: int) -> str:
    question = _req_str(obj, "question", path, line_no).strip()
    if not question:
        raise _fail(path, line_no, "'question' is empty")
    return question


def _item_id(obj: dict[str, Any], path: Path, line_no: int) -> str:
    if "id" not in obj or obj["id"] is None or isinstance(obj["id"], bool | dict | list):
        raise _fail(path, line_no, "missing or invalid 'id' (string or integer expected)")
    return str(obj["id"])


def _str_list(obj: dict[str, Any], key: str, path: Path, line_no: int) -> list[str]:
    value = obj.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(path, line_no, f"{key!r} must be a list of strings")
    return value


def _opt_int(span: dict[str, Any], key: str, path: Path, line_no: int) -> int | None:
    value = span.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(path, line_no, f"evidence {key!r} must be a positive integer")
    return value


def _parse_span(span: Any, path: Path, line_no: int, release: str | None = None) -> GoldSpan:
    """One gold span; its ``release`` (else the item's) prefixes its document key."""
    if not isinstance(span, dict) or not isinstance(span.get("doc"), str) or not span["doc"]:
        raise _fail(path, line_no, "each evidence entry needs a non-empty string 'doc'")
    start = _opt_int(span, "start_line", path, line_no)
    end = _opt_int(span, "end_line", path, line_no)
    page = _opt_int(span, "page", path, line_no)
    if (start is None) != (end is None):
        raise _fail(path, line_no, "evidence needs both 'start_line' and 'end_line' or neither")
    if start is not None and end is not None and end < start:
        raise _fail(path, line_no, f"evidence end_line {end} < start_line {start}")
    release = span.get("release", release)
    if release is not None and (not isinstance(release, str) or not release or "/" in release):
        raise _fail(path, line_no, "evidence 'release' must be a release name")
    return (release_key(release, span["doc"]) if release else span["doc"], start, end, page)


def _dedupe(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def _edaqa_item(obj: dict[str, Any], path: Path, line_no: int) -> QAItem:
    evidence = obj.get("evidence") or []
    if not isinstance(evidence, list):
        raise _fail(path, line_no, "'evidence' must be a list")
    release = _release(obj, path, line_no)
    spans = tuple(_parse_span(s, path, line_no, release) for s in evidence)
    category = obj.get("category")
    return QAItem(
        id=_item_id(obj, path, line_no),
        question=_question(obj, path, line_no),
        answer=_req_str(obj, "answer", path, line_no).strip(),
        category=str(category).strip() if category not in (None, "") else "all",
        gold_docs=_dedupe([s[0] for s in spans]),
        gold_spans=spans,
        atomic_facts=tuple(f.strip() for f in _str_list(obj, "atomic_facts", path, line_no)),
        release=release,
    )


def _release(obj: dict[str, Any], path: Path, line_no: int) -> str | None:
    release = obj.get("release")
    if release is not None and (not isinstance(release, str) or not release or "/" in release):
        raise _fail(path, line_no, "'release' must be a release name")
    return release


def _ordqa_item(
    obj: dict[str, Any], path: Path, line_no: int, source_map: dict[str, str] | None
) -> QAItem:
    refs = _str_list(obj, "reference", path, line_no)
    contents = _str_list(obj, "reference_content", path, line_no)
    docs: list[str] = []
    if source_map is not None:
        for ref in refs:
            prefix = reference_prefix(ref)
            if prefix in source_map:
                docs.append(source_map[prefix])
            else:
                log.warning(
                    "%s:%d: reference %r has no entry in the source map", path, line_no, ref
                )
    category = obj.get("type")
    return QAItem(
        id=_item_id(obj, path, line_no),
        question=_question(obj, path, line_no),
        answer=_req_str(obj, "answer", path, line_no).replace("\\n", "\n").strip(),
        category=str(category).strip() if category not in (None, "") else "all",
        gold_docs=_dedupe(docs),
        ref_passages=tuple(strip_id_header(c) for c in contents),
        atomic_facts=tuple(f.strip() for f in _str_list(obj, "atomic_facts", path, line_no)),
    )


def load_qa(
    path: str | Path,
    qa_format: QAFormat | str = "auto",
    source_map: dict[str, str] | str | Path | None = None,
) -> list[QAItem]:
    """Load a QA file into ``QAItem`` records, in file order.

    ``qa_format="auto"`` decides from the first record's keys (see :func:`detect_format`) and
    then requires every line to be of that format. ``source_map`` (a dict or a path) is used for
    ORD-QA only; without it ORD-QA items have no gold documents (document metrics are skipped).
    Ids must be unique within the file. Questions and answers are stripped of surrounding
    whitespace (after ORD-QA's literal ``\\n`` sequences become newlines).
    """
    p = Path(path)
    if qa_format not in QA_FORMATS:
        raise ValueError(f"unknown QA format {qa_format!r}; expected one of {QA_FORMATS}")
    if not p.is_file():
        raise QAFormatError(f"{p}: no such QA file")
    smap = load_source_map(source_map) if isinstance(source_map, str | Path) else source_map
    fmt = None if qa_format == "auto" else qa_format
    items: list[QAItem] = []
    seen: dict[str, int] = {}
    for line_no, obj in _records(p):
        detected = detect_format(obj)
        if fmt is None:
            fmt = detected
        elif qa_format == "auto" and detected != fmt:
            raise _fail(p, line_no, f"record looks like {detected!r} but the file is {fmt!r}")
        item = (
            _ordqa_item(obj, p, line_no, smap) if fmt == "ordqa" else _edaqa_item(obj, p, line_no)
        )
        if item.id in seen:
            raise _fail(p, line_no, f"duplicate id {item.id!r} (first on line {seen[item.id]})")
        seen[item.id] = line_no
        items.append(item)
    return items
