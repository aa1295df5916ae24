"""Shared inputs of the extraction tests (test_extraction_*.py): the sample folder, two small
Markdown sources whose line numbers the tests cite, and the parse helpers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edaqa_pipeline.extraction.artifacts import extract_artifacts
from edaqa_pipeline.extraction.chunks import build_chunks
from edaqa_pipeline.extraction.occurrences import build_occurrences
from edaqa_pipeline.parsing.markdown import parse_markdown

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "data" / "sample"

Rows = list[dict[str, Any]]


def blocks_of(src: str, name: str = "t.md") -> Rows:
    return parse_markdown(src.encode(), name)[1]


def pipeline(src: str, name: str = "t.md", **occ: Any) -> tuple[Rows, Rows, Rows, Rows]:
    """blocks, artifacts, chunks, occurrences of one Markdown source."""
    blocks = blocks_of(src, name)
    artifacts = extract_artifacts(blocks)
    chunks = build_chunks(blocks)
    return blocks, artifacts, chunks, build_occurrences(blocks, artifacts, chunks, **occ)


GRID = """\
# Grid Tool

## define_pdn_grid

The `define_pdn_grid` command creates a grid. The pitch must be at least 2 microns.

```tcl
define_pdn_grid -name core -pitch 10
```

### Options

| Switch | Description |
| --- | --- |
| `-name` | Name of the grid, see `add_pdn_stripe`. |

If the grid is empty the tool reports PDN-0042 and stops.

1. Read the design.
2. Run `define_pdn_grid`.

The grid is written to results/grid.def for later steps.

![Grid view](img/grid.png)
"""


READ = """\
# Reading designs

## The `read_def` command

Use `read_def` to load a design. ERROR: the file must exist.
Then, check the log.

```tcl
# load the floorplan
read_def -floorplan_initialize results/floorplan.def
```

> **Warning:** Keep a backup of the design.

```{warning}
Do not edit the file by hand.
```

See https://example.com/doc.pdf and [the guide](guide.md) for setup.tcl details.
"""
