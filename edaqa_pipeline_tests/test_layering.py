"""The architecture as tests: import contracts, one definition of each toolkit concept, small
modules.

``lint-imports`` checks the contracts of pyproject.toml (layers point downwards, domain code
never imports Dagster, no method imports another); the other tests keep the shared toolkit
the only home of a tokenizer, stop-word list, stemmer, BM25 and identifier pattern.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "edaqa_pipeline"
MAX_LINES = 400


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "3 kept, 0 broken" in result.stdout


def test_no_module_over_400_lines_and_the_median_is_small() -> None:
    sizes = {p.relative_to(PACKAGE).as_posix(): len(p.read_text().splitlines()) for p in _modules()}
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}
    ordered = sorted(sizes.values())
    assert ordered[len(ordered) // 2] < 120


def _definitions(pattern: str) -> list[str]:
    """``module:line`` of every line in the package matching ``pattern``."""
    out = []
    for path in _modules():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line):
                out.append(f"{path.relative_to(PACKAGE).as_posix()}:{number}")
    return out


def test_one_lexical_ranker_one_stemmer_one_stop_list() -> None:
    assert {d.split(":")[0] for d in _definitions(r"^\s*import bm25s|^\s*from bm25s")} == {"retrieval/lexical.py"}
    assert [d.split(":")[0] for d in _definitions(r"^class BM25\b|def bm25_tokens|k1 \* \(1 - b")] == []
    assert [d.split(":")[0] for d in _definitions(r"^class LexicalIndex\b")] == ["retrieval/lexical.py"]
    stemmers = r"nltk\.stem|Stemmer\(|^\s*import (?:snowballstemmer|Stemmer)|^\s*from (?:snowballstemmer|Stemmer)"
    assert {d.split(":")[0] for d in _definitions(stemmers)} == {"text/tokens.py"}
    assert [d.split(":")[0] for d in _definitions(r"^_?[A-Z_]*STOP[A-Z_]* = frozenset")] == ["text/tokens.py"]
    assert _definitions(r'query_type="fts"|create_index\([^)]*FTS') == []


def _literal(text: str) -> str:
    return re.escape(text)


def test_one_identifier_definition() -> None:
    """Message ids, ORFS variables and options are matched by text/identifiers.py only."""
    for fragment in ("{2,5}-\\d", "[A-Z][A-Z0-9]*(?:_", "--?[a-zA-Z]"):
        found = {d.split(":")[0] for d in _definitions(_literal(fragment))}
        assert found <= {"text/identifiers.py"}, (fragment, found)


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_contract_check_sees_a_dagster_import() -> None:
    assert "dagster" in _imported_roots(PACKAGE / "definitions.py")
