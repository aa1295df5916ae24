"""Typed artifacts (the paper's schema T) from parsed blocks.

Explicit structures come from deterministic rules on the block kind (code fence -> codeblock,
pipe/PDF table -> table, image -> figure, ordered list -> procedure, inline code naming a
command -> inline_command, file names -> file). Semantic spans inside prose (procedures,
constraints, diagnostics) come from a ``SemanticExtractor``: the offline rules in
``semantic.py`` by default, the LLM layer when configured; both return the same record, so the
artifact table has one schema whatever extracted it. The ``rule`` column names the rule.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from edaqa_pipeline.extraction.semantic import SemanticSpans, offline_semantic_spans
from edaqa_pipeline.model import normalise_ws, stable_id
from edaqa_pipeline.text.identifiers import COMMAND, LANGUAGE_WORDS, file_names, inline_code_spans
from edaqa_pipeline.text.sentences import split_sentences

PROSE_KINDS = frozenset({"paragraph", "list", "blockquote", "admonition", "html"})
WARNING_LABELS = frozenset({"warning", "caution", "important", "attention", "danger", "error"})


class SemanticExtractor(Protocol):
    """Marks procedure / constraint / diagnostic spans among a block's sentences."""

    name: str

    def __call__(
        self, block: dict[str, Any], sentences: list[dict[str, str]]
    ) -> tuple[SemanticSpans, dict[str, str]]: ...


class OfflineSemanticExtractor:
    """The deterministic default (rules documented in ``semantic.py``)."""

    name = "offline"

    def __call__(
        self, block: dict[str, Any], sentences: list[dict[str, str]]
    ) -> tuple[SemanticSpans, dict[str, str]]:
        return offline_semantic_spans(sentences)


def command_name(span: str) -> str | None:
    """The command an inline code span names (its first word), if it looks like one."""
    first = span.split()[0] if span.split() else ""
    first = first.rstrip("();,")
    if COMMAND.fullmatch(first) and first not in LANGUAGE_WORDS:
        return first
    return None


class _Builder:
    """Accumulates artifact rows for one document with content-derived, de-duplicated ids."""

    def __init__(self, document: str) -> None:
        self.document = document
        self.rows: list[dict[str, Any]] = []
        self._seen: Counter[tuple[str, str]] = Counter()

    def add(
        self,
        block: dict[str, Any],
        artifact_type: str,
        content: str,
        rule: str,
        lines: tuple[int | None, int | None] | None = None,
    ) -> None:
        content = content.strip()
        if not content:
            return
        key = (artifact_type, normalise_ws(content))
        dup = self._seen[key]
        self._seen[key] += 1
        start, end = lines if lines else (block["start_line"], block["end_line"])
        self.rows.append(
            {
                "artifact_id": stable_id("art", self.document, artifact_type, content, dup),
                "document": self.document,
                "block_id": block["block_id"],
                "artifact_type": artifact_type,
                "content": content,
                "section_path": list(block["section_path"]),
                "start_line": start,
                "end_line": end,
                "page": block["page"],
                "bbox": block["bbox"],
                "rule": rule,
            }
        )


def _text_offset(text: str, raw: str) -> int:
    """Source lines before the block's text begins: an admonition's opening line
    (```` ```{warning} ````, ``!!! note``, ``> [!NOTE]``) holds none of its text."""
    first = text.lstrip().split("\n", 1)[0].strip()[:40]
    if not first:
        return 0
    for offset, line in enumerate(raw.split("\n")):
        if first in line:
            return offset
    return 0


def _line_locator(block: dict[str, Any]) -> Callable[[str], tuple[int | None, int | None]]:
    """Maps a sentence of the block's text to its 1-based line span (None for PDF blocks)."""
    text: str = block["text"]
    base = block["start_line"]
    if base is not None and block["kind"] == "admonition":
        base += _text_offset(text, block.get("raw") or "")
    cursor = 0

    def locate(piece: str) -> tuple[int | None, int | None]:
        nonlocal cursor
        if base is None:
            return None, None
        idx = text.find(piece, cursor)
        if idx < 0:
            idx = text.find(piece)
        if idx < 0:
            return block["start_line"], block["end_line"]
        cursor = idx + len(piece)
        start = base + text.count("\n", 0, idx)
        return start, start + piece.count("\n")

    return locate


def _mentions(builder: _Builder, block: dict[str, Any], text: str, rule_prefix: str) -> None:
    """inline_command and file artifacts for code spans / file names mentioned in ``text``."""
    locate = _line_locator(block)
    seen: set[tuple[str, str]] = set()
    for span in inline_code_spans(text):
        cmd = command_name(span)
        if cmd and ("inline_command", cmd) not in seen:
            seen.add(("inline_command", cmd))
            builder.add(block, "inline_command", span, f"{rule_prefix}.inline_code_command", locate(span))
    for name in file_names(text):
        if ("file", name) not in seen:
            seen.add(("file", name))
            builder.add(block, "file", name, f"{rule_prefix}.file_name", locate(name))


def _prose(
    builder: _Builder, block: dict[str, Any], semantic: SemanticExtractor
) -> None:
    label = ""
    if block["kind"] == "admonition":
        label = json.loads(block["meta"] or "{}").get("label", "")
    pieces = split_sentences(block["text"])
    sentences = [{"id": f"s{i}", "text": p} for i, p in enumerate(pieces)]
    spans, rules = semantic(block, sentences)
    typed: dict[str, tuple[str, str]] = {}
    for span in spans.spans:
        for sid in span.sentence_ids:
            typed[sid] = (span.artifact_type, rules.get(sid, f"{semantic.name}.semantic_span"))
    if label in WARNING_LABELS and not typed:
        typed = {s["id"]: ("constraint", "constraint.admonition_warning") for s in sentences}
    locate = _line_locator(block)
    run: list[dict[str, str]] = []
    run_type: tuple[str, str] | None = None

    def flush() -> None:
        if not run:
            return
        spans = [locate(s["text"]) for s in run]
        span_lines = (spans[0][0], spans[-1][1])
        joiner = " " if block["start_line"] is None else "\n"
        content = joiner.join(s["text"] for s in run)
        kind, rule = run_type or ("text", "prose.untyped_sentences")
        builder.add(block, kind, content, rule, span_lines)

    for sentence in sentences:
        current = typed.get(sentence["id"], ("text", "prose.untyped_sentences"))
        if run and current[0] != (run_type or ("text", ""))[0]:
            flush()
            run = []
        if not run:
            run_type = current
        run.append(sentence)
    flush()
    _mentions(builder, block, block["text"], "prose")


def extract_artifacts(
    blocks: Iterable[dict[str, Any]], semantic: SemanticExtractor | None = None
) -> list[dict[str, Any]]:
    """All typed artifacts of one document's blocks, in block order."""
    semantic = semantic or OfflineSemanticExtractor()
    blocks = list(blocks)
    if not blocks:
        return []
    builder = _Builder(blocks[0]["document"])
    for block in blocks:
        kind = block["kind"]
        if kind == "heading":
            _mentions(builder, block, block["text"], "heading")
        elif kind == "code":
            builder.add(block, "codeblock", block["text"], "structure.code_fence")
            for name in file_names(block["text"]):
                builder.add(block, "file", name, "code.file_argument")
        elif kind == "table":
            builder.add(block, "table", block["text"], "structure.table")
            _mentions(builder, block, block["text"], "table")
        elif kind in ("image", "figure"):
            builder.add(block, "figure", block["text"] or "(figure)", f"structure.{kind}")
        elif kind == "ordered_list":
            builder.add(block, "procedure", block["text"], "structure.ordered_list")
            _mentions(builder, block, block["text"], "procedure")
        elif kind in PROSE_KINDS:
            _prose(builder, block, semantic)
    return builder.rows
