"""Build a corpus folder of Markdown manuals into an HTML documentation site, the way the
OpenROAD site is built: Sphinx with MyST (``myst-parser``) and the Read the Docs theme
(``sphinx-rtd-theme``, with its sidebar, breadcrumbs, "Edit on GitHub" link and footer), one
page per manual, an ``index.html`` with the table of contents, and links between pages.

Beside the site it writes ``OUT.line_map.json``: for each Markdown manual, the page it became and,
for every docutils node that carries a source line, ``[markdown line, HTML line]`` (the line
of the page where the node's element starts). A small Sphinx extension gets those lines by
adding a ``data-source-line`` attribute to each such element; the HTML parser ignores it.
``benchmarks/format_parity.py`` maps gold line spans through this file.

    .venv/bin/python scripts/build_html_site.py --corpus ../shared/corpus/openroad --out /tmp/site26

The site is a test corpus built from what the repo already reads: never commit it.
Needs the dev extras (``make setup-dev``: sphinx, myst-parser, sphinx-rtd-theme).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

EXTENSION = '''
from docutils import nodes
from sphinx.writers.html5 import HTML5Translator


class SourceLineTranslator(HTML5Translator):
    """Adds data-source-line to every element whose node knows its Markdown line."""

    def starttag(self, node, tagname, suffix="\\n", empty=False, **attributes):
        line = getattr(node, "line", None)
        if isinstance(node, nodes.Element) and isinstance(line, int) and line > 0:
            attributes.setdefault("data-source-line", str(line))
        return super().starttag(node, tagname, suffix, empty, **attributes)


def setup(app):
    app.set_translator("html", SourceLineTranslator, override=True)
    return {"parallel_read_safe": True}
'''

CONF = '''
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
project = {project!r}
extensions = ["myst_parser", "edaqa_source_lines"]
source_suffix = {{".md": "markdown"}}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]
suppress_warnings = ["myst", "toc", "ref", "misc.highlighting_failure", "image"]
html_theme = {theme!r}
html_context = {{"display_github": True, "github_user": "The-OpenROAD-Project",
                 "github_repo": "OpenROAD", "github_version": "master", "conf_py_path": "/docs/"}}
html_show_sourcelink = True
'''


def theme() -> str:
    try:
        import sphinx_rtd_theme  # noqa: F401
    except ImportError:
        return "alabaster"  # Sphinx's own theme, when the Read the Docs theme is not installed
    return "sphinx_rtd_theme"


def write_project(corpus: Path, src: Path) -> list[str]:
    """Copy the manuals into a Sphinx project; the index's toctree lists every one."""
    pages = []
    for path in sorted(corpus.rglob("*.md")):
        rel = path.relative_to(corpus)
        if any(part.startswith(".") for part in rel.parts) or rel.name.upper() in ("SOURCE.MD", "SOURCES.MD"):
            continue
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, src / rel)
        pages.append(rel.with_suffix("").as_posix())
    toctree = "\n".join(pages)
    (src / "index.md").write_text(f"# {corpus.name} manuals\n\n```{{toctree}}\n:maxdepth: 1\n\n{toctree}\n```\n")
    (src / "edaqa_source_lines.py").write_text(EXTENSION)
    (src / "conf.py").write_text(CONF.format(project=corpus.name, theme=theme()))
    return pages


def line_map(out: Path, pages: list[str]) -> dict[str, dict[str, object]]:
    """For each manual: its page and the [Markdown line, HTML line] of every marked element."""
    import lxml.html

    mapping: dict[str, dict[str, object]] = {}
    for page in pages:
        html = out / f"{page}.html"
        if not html.is_file():
            continue
        tree = lxml.html.fromstring(html.read_bytes())
        pairs = sorted({(int(el.get("data-source-line")), el.sourceline)
                        for el in tree.iter() if isinstance(el.tag, str) and el.get("data-source-line")})
        mapping[f"{page}.md"] = {"html": f"{page}.html", "lines": [list(p) for p in pairs]}
    return mapping


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="folder of Markdown manuals")
    parser.add_argument("--out", type=Path, required=True, help="site folder to write (replaced)")
    parser.add_argument("--map", type=Path, default=None,
                        help="where line_map.json goes (default: OUT.line_map.json, beside the site)")
    args = parser.parse_args(argv)
    map_path = args.map or args.out.with_name(args.out.name + ".line_map.json")
    with tempfile.TemporaryDirectory(prefix="edaqa-site-") as tmp:
        src = Path(tmp)
        pages = write_project(args.corpus, src)
        if args.out.exists():
            shutil.rmtree(args.out)
        build = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", "auto",
                                str(src), str(args.out)], capture_output=True, text=True)
        if build.returncode != 0:
            print(build.stderr, file=sys.stderr)
            return build.returncode
    for extra in ("_sources", ".doctrees", ".buildinfo", "objects.inv"):
        target = args.out / extra
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    mapping = line_map(args.out, pages)
    map_path.write_text(json.dumps(mapping, indent=1, sort_keys=True))
    n_html = len(list(args.out.rglob("*.html")))
    print(f"{len(pages)} manuals -> {n_html} pages in {args.out} (theme {theme()}); {map_path}: "
          f"{sum(len(m['lines']) for m in mapping.values())} mapped elements")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
