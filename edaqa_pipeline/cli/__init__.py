"""The ``edaqa`` command.

``index`` and ``train`` launch Dagster (a persistent instance per storage root, so every run
shows in the UI); ``ask``, ``eval`` and ``serve`` read the stored tables and LanceDB directly
and never load Dagster, so answering starts fast.
"""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = """Question answering over EDA documentation with cited evidence.

  edaqa index --corpus DOCS --storage STORE        build (or refresh) the indexes
  edaqa ask "how do I enable sink clustering?"     answer with citations
  edaqa eval --qa questions.jsonl                  compare methods on a QA set
  edaqa serve                                      HTTP API (POST /ask, OpenAI /v1)

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
