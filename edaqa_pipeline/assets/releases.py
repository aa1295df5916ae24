"""The cross-release asset: what changed between the releases of the manuals a storage root
holds (``corpus.releases``).

``release_changes`` compares the element rows (``elements``) of every two releases, older to
newer by date: commands and options added, removed or moved between manuals, defaults,
allowed values and descriptions changed, each with the lines of both sides
(``graphs/release_changes.py``). A storage root of one corpus (or one release) has no change:
the table is empty. ``edaqa changes`` prints it.

Blocking check ``cites_both_releases``: every change cites lines of a document of its own
release on each side it has (the old side in the older release, the new side in the newer),
lines that its element rows hold.
"""

import json
from collections import Counter
from collections.abc import Iterator

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetIn,
    AssetKey,
    Output,
    asset,
)

from edaqa_pipeline.assets.partitions import DOCUMENT_ASSETS
from edaqa_pipeline.assets.units import ALL_PARTITIONS, CORPUS_CONDITION, concat
from edaqa_pipeline.corpus.releases import Releases, key_release
from edaqa_pipeline.graphs import release_changes as changes
from edaqa_pipeline.graphs.elements import graph
from edaqa_pipeline.resources import PipelineSettings

GROUP = "releases"


def citation_problems(frame: pl.DataFrame, nodes: pl.DataFrame) -> list[str]:
    """Changes whose cited side is missing, in the wrong release, or not lines of its document."""
    spans: dict[str, int] = {}
    for doc, end in nodes.select("document", "end_line").drop_nulls().iter_rows():
        spans[doc] = max(spans.get(doc, 0), end)
    problems: list[str] = []
    for row in frame.iter_rows(named=True):
        sides = {"old": row["kind"] not in ("command_added", "option_added"),
                 "new": row["kind"] not in ("command_removed", "option_removed")}
        for side, release in (("old", row["from_release"]), ("new", row["to_release"])):
            doc, start, end = row[f"{side}_doc"], row[f"{side}_start"], row[f"{side}_end"]
            if not sides[side]:
                continue
            if key_release(doc) != release or start is None or end is None \
                    or not 1 <= start <= end <= spans.get(doc, 0):
                problems.append(f"{row['change_id']} ({row['kind']} {row['command']} {row['option']}): "
                                f"{side} side {doc}:{start}-{end} is not lines of release {release}")
    return problems


@asset(
    group_name=GROUP,
    kinds={"python", "polars", "parquet"},
    code_version="1",
    ins={"elements": AssetIn(metadata=ALL_PARTITIONS)},
    # after every per-document step of a build, as every cross-document asset is: a build
    # whose corpus assets are older than a document's tables counts as interrupted
    deps=[a for a in DOCUMENT_ASSETS if a != "elements"],
    automation_condition=CORPUS_CONDITION,
    check_specs=[AssetCheckSpec("cites_both_releases", asset="release_changes", blocking=True,
                                description="every change cites lines of its own release on each side")],
    description="What changed between every two releases (older -> newer): commands and options "
    "added, removed or moved, defaults, allowed values and descriptions changed, each citing "
    "the lines of both sides. Empty for a storage root of one corpus.",
)
def release_changes(elements: dict[str, pl.DataFrame], settings: PipelineSettings) -> Iterator:
    releases = Releases.load(settings.settings().storage_root)
    nodes = concat(elements, graph.ELEMENTS_SCHEMA)
    frame = changes.release_changes(nodes, releases.names)
    kinds = Counter(frame["kind"].to_list())
    yield Output(frame, metadata={"dagster/row_count": frame.height, "releases": ", ".join(releases.names),
                                  "by_kind": json.dumps(dict(sorted(kinds.items())))})
    problems = citation_problems(frame, nodes)
    yield AssetCheckResult(asset_key=AssetKey("release_changes"), check_name="cites_both_releases",
                           passed=not problems, severity=AssetCheckSeverity.ERROR,
                           metadata={"problems": "\n".join(problems[:20]) or "none",
                                     "failed": len(problems)})
