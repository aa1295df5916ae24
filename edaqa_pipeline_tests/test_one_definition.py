"""One definition of document structure, packing and fusion (as ``test_layering`` holds one
stemmer): a fix in one place must reach every consumer, so no second copy may exist.

* the code fence is written only in ``text/markup.py``; the parser
  (``parsing/lines.py``) is the only module that decides what a line is, and consumers read
  the stored kinds (``chunks.line_kinds``);
* ``retrieval/packing.py`` is the only token-budget packer and ``retrieval/fusion.py`` the
  only reciprocal-rank / score fusion; ``text/counting.py`` the only token count.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import polars as pl

PACKAGE = Path(__file__).resolve().parents[1] / "edaqa_pipeline"


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (they may describe a fence)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _string_constants(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = _docstrings(tree)
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip]


def test_one_fence_rule() -> None:
    fence = re.compile(r"```|~~~|`\{3|~\{3")
    found = {_name(p) for p in _modules() if any(fence.search(s) for s in _string_constants(p))}
    assert found == {"text/markup.py"}


def _calls(path: Path, attribute: str) -> list[tuple[int, str]]:
    """(line, first argument's source) of every ``x.<attribute>(...)`` call."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [(n.lineno, ast.unparse(n.args[0])) for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == attribute and n.args]


def test_one_line_classifier() -> None:
    """Nothing outside the parser and the markup rules asks whether a line is a table row, a
    heading or a fence by looking at its first character. The exceptions are not structure:
    a code line that is a Tcl comment, a link target that is a page anchor, ORD-QA's own
    definition of a reference passage's countable lines, and a QA file's comment line."""
    allowed = {("generation/extractive.py", "'#'"), ("graphs/elements/link_rules.py", "'#'"),
               ("evaluation/metrics.py", "'#'"), ("extraction/datasheets/prose_rules.py", "'#'"),
               ("evaluation/qa.py", "'#'")}
    found = set()
    for path in _modules():
        if _name(path).startswith("parsing/") or _name(path) == "text/markup.py":
            continue
        for _, arg in _calls(path, "startswith"):
            if re.fullmatch(r"""['"](\||#+|`{3}|~{3})['"]|\(.*['"](\||`{3}|~{3})['"].*\)""", arg):
                found.add((_name(path), arg))
    assert found <= allowed, found - allowed


def _defining(pattern: str) -> set[str]:
    rx = re.compile(pattern, re.MULTILINE)
    return {_name(p) for p in _modules() if rx.search(p.read_text())}


def test_one_packer_one_fusion_one_token_count() -> None:
    assert _defining(r"/ \(k \+ rank\)|/ \(rrf_k \+ |weight / \(") == {"retrieval/fusion.py"}
    assert _defining(r"^def (?:rrf|rrf_merge|weighted_score_fusion)\b") == {"retrieval/fusion.py"}
    # a packer walks ranked items against a character or token budget
    assert _defining(r"^def pack\w*\(") <= {"retrieval/packing.py", "graphs/elements/bundles.py"}
    bundles = (PACKAGE / "graphs/elements/bundles.py").read_text()
    assert "pack_shrinking(" in bundles and "budget_chars - used" not in bundles
    assert _defining(r"^def approx_tokens\b|math\.ceil\(len\([^)]*\) / 4\)") == {"text/counting.py"}


def test_stored_line_kinds_cover_every_chunk_line(tmp_path: Path) -> None:
    """The parser's kinds reach the chunk rows, one per line, on the sample corpus."""
    from edaqa_pipeline.extraction.chunks import build_chunks
    from edaqa_pipeline.model import CHUNKS_SCHEMA, frame
    from edaqa_pipeline.parsing.lines import LINE_KINDS
    from edaqa_pipeline.parsing.markdown import parse_markdown
    from edaqa_pipeline.validation.structure import chunk_problems

    source = (PACKAGE.parent / "data" / "sample" / "cts.md").read_bytes()
    _, blocks = parse_markdown(source, "cts.md")
    chunks = frame(build_chunks(blocks), CHUNKS_SCHEMA)
    assert chunk_problems(chunks, None) == []
    kinds = {k for ks in chunks["line_kinds"].to_list() for k in ks}
    assert {"heading", "text", "table_header", "table_rule", "table_row", "code_fence", "code"} <= kinds <= set(LINE_KINDS)
    # the data check catches a row whose kinds do not match its lines
    broken = chunks.with_columns(pl.col("line_kinds").list.slice(1))
    assert any("line_kinds do not match" in p for p in chunk_problems(broken, None))
