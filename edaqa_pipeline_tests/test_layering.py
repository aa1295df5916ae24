"""Imports point downwards only: no module of a domain package imports Dagster."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "edaqa_pipeline"
# The Dagster layer: the asset package and the top-level wiring modules.
DAGSTER_LAYER = {"assets", "checks.py", "cli.py", "definitions.py", "jobs.py", "resources.py",
                 "schedules.py", "sensors.py"}


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_domain_packages_never_import_dagster() -> None:
    domain = [p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] not in DAGSTER_LAYER]
    assert len(domain) > 50  # every domain package and top-level module is scanned
    offenders = [str(p.relative_to(PACKAGE)) for p in domain
                 if any(r == "dagster" or r.startswith("dagster_") for r in _imported_roots(p))]
    assert offenders == []


def test_the_scan_sees_a_dagster_import() -> None:
    assert "dagster" in _imported_roots(PACKAGE / "definitions.py")
    assert "dagster_polars" in _imported_roots(PACKAGE / "definitions.py")
