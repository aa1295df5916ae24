"""What changed between two releases, read from the ``release_changes`` table: the report
``edaqa changes`` prints (and, as JSON, what a program reads)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edaqa_pipeline.corpus.releases import ReleaseError, Releases
from edaqa_pipeline.graphs.release_changes import as_record
from edaqa_pipeline.service.errors import BAD_REQUEST, CONFLICT, NOT_FOUND, ServiceError

if TYPE_CHECKING:
    import polars as pl

CHANGES_TABLE = "release_changes"


def changes_table(storage: Path) -> pl.DataFrame | None:
    """The storage root's ``release_changes`` table (None before it was built)."""
    from edaqa_pipeline.storage.tables import read_table

    return read_table(Path(storage) / "tables", CHANGES_TABLE)


def _pair(releases: Releases, older: str | None, newer: str | None) -> tuple[str, str]:
    """(older, newer): the named releases; ``newer`` defaults to the newest and ``older`` to
    the release just before ``newer``. 404 for a name the storage root does not hold, 400
    when ``older`` is not dated before ``newer``."""
    if len(releases.items) < 2:
        raise ServiceError("the storage root holds fewer than two releases: nothing to compare",
                           status=NOT_FOUND, param="from")
    found = {}
    for name, param in ((newer or releases.newest, "to"), (older, "from")):
        if name is None:
            continue
        try:
            found[param] = releases.get(name)
        except ReleaseError as exc:
            raise ServiceError(str(exc), status=NOT_FOUND, param=param) from None
    position = releases.items.index(found["to"])
    if "from" not in found:
        if position == 0:
            raise ServiceError(f"{found['to'].name!r} is the oldest release: nothing comes before it",
                               param="to")
        found["from"] = releases.items[position - 1]
    if releases.items.index(found["from"]) >= position:
        raise ServiceError(f"--from {found['from'].name} ({found['from'].date}) is not older than "
                           f"--to {found['to'].name} ({found['to'].date})", status=BAD_REQUEST, param="from")
    return found["from"].name, found["to"].name


def release_changes(storage: str | Path, older: str | None = None, newer: str | None = None, *,
                    tool: str | None = None, command: str | None = None,
                    option: str | None = None) -> dict[str, Any]:
    """The changes from ``older`` to ``newer`` (default: the two newest releases), narrowed
    to a tool (``cts``: the manual's name), a command or an option."""
    storage = Path(storage)
    try:
        releases = Releases.load(storage)
    except ReleaseError as exc:
        raise ServiceError(str(exc), status=CONFLICT) from None
    older, newer = _pair(releases, older, newer)
    table = changes_table(storage)
    if table is None:
        raise ServiceError(f"{storage} has no {CHANGES_TABLE} table: run `edaqa index` on it again",
                           status=NOT_FOUND)
    option = option if option is None or option.startswith("-") else f"-{option}"
    rows = [r for r in table.iter_rows(named=True)
            if r["from_release"] == older and r["to_release"] == newer
            and (tool is None or r["tool"] == tool) and (command is None or r["command"] == command)
            and (option is None or r["option"] == option)]
    rows.sort(key=lambda r: (r["tool"], r["command"], r["option"], r["kind"]))
    return {"from": releases.get(older).to_json(), "to": releases.get(newer).to_json(),
            "filters": {k: v for k, v in (("tool", tool), ("command", command), ("option", option)) if v},
            "counts": dict(sorted(Counter(r["kind"] for r in rows).items())),
            "changes": [as_record(r) for r in rows]}


def change_values(change: dict[str, Any]) -> str:
    """": 250 -> 500" for a change of value (a side that states none: "(not stated)"), else ""."""
    if change["kind"] not in ("default_changed", "values_changed"):
        return ""
    return ": " + " -> ".join(change[s].get("value") or "(not stated)" for s in ("old", "new") if s in change)
