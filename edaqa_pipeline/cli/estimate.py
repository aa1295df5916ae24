"""``edaqa estimate``: the tokens and calls a full LLM build of a corpus would need, before
paying for one (parses the corpus in this process; nothing is stored)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path


def _cmd_estimate(args: argparse.Namespace) -> int:
    from edaqa_pipeline.corpus.scan import scan_corpus
    from edaqa_pipeline.extraction.semantic_llm import prompt_pairs
    from edaqa_pipeline.llm import estimate_tokens
    from edaqa_pipeline.parsing.documents import parse_file
    from edaqa_pipeline.parsing.errors import DocumentError

    files = scan_corpus(Path(args.corpus)).files
    pairs: list[tuple[str, str]] = []
    skipped = 0
    for file in files:
        try:
            _, blocks = parse_file(file.path, file.key)
        except DocumentError:
            skipped += 1
            continue
        pairs.extend(prompt_pairs(blocks))
    estimate = estimate_tokens(pairs)
    estimate.update({"documents": len(files) - skipped, "documents_unparseable": skipped,
                     "task": "semantic_spans"})
    print(json.dumps(estimate, indent=2, sort_keys=True))
    return 0


def add_estimate_command(sub: argparse._SubParsersAction,  # type: ignore[type-arg]
                         path_arguments: Callable[..., None]) -> None:
    p = sub.add_parser("estimate", help="tokens and calls a full LLM build would need")
    path_arguments(p, "corpus")
    p.set_defaults(func=_cmd_estimate)
