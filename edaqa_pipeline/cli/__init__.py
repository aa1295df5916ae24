"""The ``edaqa`` command: argument parsing and printing over the layers below.

``index`` and ``train`` launch Dagster (a persistent instance per storage root, so every run
shows in the UI). ``ask``, ``eval`` and ``serve`` call ``edaqa_pipeline.service``, the one
search-and-answer API that the HTTP app (``service/http.py``) and any other surface share: it
reads the stored tables and LanceDB directly and never loads Dagster, so answering starts
fast, and its ``ServiceError`` is what these commands print as a one-line error. The CLI
imports nothing else below it except the registry's method names for ``--method`` choices
(``test_layering.py`` holds this, listing what the Dagster-launching commands need).
"""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = """Question answering over EDA documentation with cited evidence.

  edaqa index --corpus DOCS --storage STORE        build (or refresh) the indexes
  edaqa ask "how do I enable sink clustering?"     answer with citations
  edaqa eval --qa questions.jsonl                  compare methods on a QA set
  edaqa serve                                      HTTP API (POST /ask, OpenAI /v1)
  edaqa mcp                                        MCP server for agents (stdio or HTTP)

--corpus / --storage default to $EDAQA_CORPUS / $EDAQA_STORAGE."""


def build_parser() -> argparse.ArgumentParser:
    from edaqa_pipeline.cli.index import add_index_commands
    from edaqa_pipeline.cli.query import add_query_commands
    from edaqa_pipeline.cli.serve import add_serve_command
    from edaqa_pipeline.cli.train import add_train_command

    parser = argparse.ArgumentParser(prog="edaqa", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_index_commands(sub)
    add_query_commands(sub)
    add_train_command(sub)
    add_serve_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:  # Ctrl-C: a line, not a traceback; Dagster keeps what finished
        print("interrupted", file=sys.stderr)
        return 130
