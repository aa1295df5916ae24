"""Shared inputs of the TechDocRAG element-graph tests (test_elements_*.py,
test_element_steps.py): two hand-written manuals and lookups over built rows and edges."""

from __future__ import annotations

from typing import Any

from edaqa_pipeline.graphs.elements import graph
from edaqa_pipeline.parsing.markdown import parse_markdown

PLACER = """\
# Placer

The placer puts standard cells into rows. See Section 2.1 for the command and Table 1 for
its options.

## 1 Overview

Placement runs after floorplanning.

## 2 Commands

### 2.1 Place Cells

The `place_cells` command places standard cells. The `-density` option of `place_cells`
sets the target density.

```tcl
place_cells
    [-density value]
    [-timing_driven]
```

#### Options

Table 1: Options of place_cells.

| Switch Name | Description |
| ----- | ----- |
| `-density` | Target density between 0.1 and 1.0. Default 0.7. |
| `-timing_driven` | Enable timing-driven mode. |

![Density map](./images/density.png)

*Figure 1: Cell density after placement.*

Figure 1 shows the density hot spots near the macros.

### 2.2 Legalize

To legalize a placement:

1. Run `place_cells -density 0.6` first.
2. Run `check_placement` to verify the rows.

```tcl
check_placement -verbose
```

3. Write the result with `write_def out.def`.

> **Warning:** legalization fails with error PLC-0042 when rows are missing.

See [the commands](#2-commands) above.
"""

ROUTER = """\
# Router

The router connects pins. Before routing, run `place_cells` as described in the
[placer manual](placer.md#21-place-cells).

## Route

The `route_design` command routes all nets. Set `ROUTE_LAYERS` to restrict the layers.

| Variable | Description |
|---|---|
| `ROUTE_LAYERS` | Metal layers used by the router, for example met1-met5. |
"""


def doc_rows(text: str, name: str = "placer.md") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    _, blocks = parse_markdown(text.encode(), name)
    return graph.build_document(blocks)


def find(rows: list[dict[str, Any]], etype: str, contains: str = "") -> dict[str, Any]:
    hits = [r for r in rows if r["element_type"] == etype and contains in r["raw"]]
    assert hits, (etype, contains)
    return hits[0]


def has_edge(edges: list[dict[str, Any]], src: dict[str, Any], dst: dict[str, Any], relation: str, rule: str = "") -> bool:
    return any(e["src"] == src["element_id"] and e["dst"] == dst["element_id"] and e["relation"] == relation
               and (not rule or e["rule"] == rule) for e in edges)
