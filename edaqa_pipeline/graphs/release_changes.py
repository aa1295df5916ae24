"""What changed between two releases of the manuals, from the element graph of each.

The element rows already know, per document, which command a section documents
(``scope_command``) and each row of its options table (first cell ``-option``). Two releases
are compared on those, keyed by (command, option):

* ``command_added`` / ``command_removed``: a command documented in one release only;
* ``option_added`` / ``option_removed``: an option of a command both document;
* ``moved``: the same option, documented in another manual;
* ``default_changed``: the default the row states differs (``20`` -> ``30``);
* ``values_changed``: the allowed values it states differ (``[1, MAX_INT]`` -> ``[0, MAX_INT]``);
* ``description_changed``: the row's text differs otherwise (whitespace and markup aside).

Every change cites its lines: the old row (or section) in the older release, the new one in the
newer, or the one side that exists; an option that did not change gives no record, so a
question about it never gets an invented change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from edaqa_pipeline.corpus.releases import key_release
from edaqa_pipeline.graphs.elements import rules
from edaqa_pipeline.model import EvidenceItem, normalise_ws, stable_id
from edaqa_pipeline.text import identifiers
from edaqa_pipeline.text.markup import table_cells

CHANGE_KINDS = ("command_added", "command_removed", "option_added", "option_removed", "moved",
                "default_changed", "values_changed", "description_changed")
# "The default value is `50`", "(default = 250)", "Default: `R0`", "internal cap (default 30,"
# "The default value is `50`", "(default = 250)", "Default: `R0`", "Defaults to `GROUND`",
# "default values are [64, 20]"; "non-default rule" and "(default 30, or ...)" inside a clause
# about something else state no default
DEFAULT = re.compile(r"(?<![\w-])default(?:s\s+to|(?:\s+values?)?\s*(?:\bis\b|\bare\b|=|:))\s*`?"
                     r"(?P<value>\[[^\]]*\]|\{[^}]*\}|[^`,;()|]+?)`?"
                     r"(?=\.\s|\.?$|\s*[,;()|]|\s+(?:and|for|when|if|meaning)\b)", re.IGNORECASE)
ALLOWED = re.compile(r"\ballowed values? (?:are|is)\s+(?P<value>.+?)(?=\.(?:\s|$)|\||$)", re.IGNORECASE)
MAX_VALUE_WORDS = 3  # "pitch / 2"; "to perform pin swap transform ..." is a sentence, not a value

CHANGES_SCHEMA: dict[str, pl.DataType] = {
    "change_id": pl.String(), "from_release": pl.String(), "to_release": pl.String(),
    "kind": pl.String(), "tool": pl.String(), "command": pl.String(), "option": pl.String(),
    "old_doc": pl.String(), "old_start": pl.Int64(), "old_end": pl.Int64(), "old_text": pl.String(),
    "old_value": pl.String(), "new_doc": pl.String(), "new_start": pl.Int64(), "new_end": pl.Int64(),
    "new_text": pl.String(), "new_value": pl.String(),
}


@dataclass(frozen=True)
class Documented:
    """One command or option row of one release: where it is and what it says."""

    command: str
    option: str  # "" for the command itself
    doc: str  # the document key (RELEASE/PATH)
    start: int
    end: int
    text: str

    @property
    def tool(self) -> str:
        return self.doc.rsplit("/", 1)[-1].rsplit(".", 1)[0]

    @property
    def description(self) -> str:
        cells = table_cells(self.text)
        return normalise_ws(" ".join(cells[1:]) if len(cells) > 1 else self.text).replace("`", "")


def stated(pattern: re.Pattern[str], text: str) -> str:
    """The value ``pattern`` finds in ``text`` (the first), normalised; "" when none, or when
    what follows "default is" is a phrase rather than a value."""
    found = pattern.search(text.replace("`", ""))
    value = normalise_ws(found.group("value")).strip(" .\"'") if found else ""
    if pattern is DEFAULT and len(value.split()) > MAX_VALUE_WORDS:
        return ""
    return value


def documented(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, str], Documented]:
    """(command, option) -> where one release documents it: each options-table row (the
    first, when a table lists an option twice) and, with option "", each command's first
    section or row."""
    out: dict[tuple[str, str], Documented] = {}
    for row in sorted(rows, key=lambda r: (r["document"], r["ordinal"])):
        command = row["scope_command"]
        if not command or row["start_line"] is None:
            continue
        place = Documented(command, "", row["document"], row["start_line"], row["end_line"], row["raw"])
        if row["element_type"] in ("section", "table_row"):
            out.setdefault((command, ""), place)
        if row["element_type"] == "table_row":
            option = identifiers.canonical(rules.first_word(rules.row_key(row)))
            if option.startswith("-"):
                out.setdefault((command, option), Documented(command, option, row["document"],
                                                             row["start_line"], row["end_line"], row["raw"]))
    return out


def commands(places: dict[tuple[str, str], Documented]) -> set[str]:
    """The commands a release documents: those with an options table, or named like one
    (``set_cts_config``); a section's scope word alone ("less", a grammar keyword) is not."""
    with_options = {c for c, o in places if o}
    return {c for c, o in places if not o and (c in with_options or "_" in c)}


def _change(kind: str, old: Documented | None, new: Documented | None, releases: tuple[str, str],
            old_value: str = "", new_value: str = "") -> dict[str, Any]:
    side = new or old
    assert side is not None
    record = {"from_release": releases[0], "to_release": releases[1], "kind": kind, "tool": side.tool,
              "command": side.command, "option": side.option, "old_value": old_value, "new_value": new_value}
    for name, place in (("old", old), ("new", new)):
        record.update({f"{name}_doc": place.doc if place else "", f"{name}_start": place.start if place else None,
                       f"{name}_end": place.end if place else None, f"{name}_text": place.text if place else ""})
    record["change_id"] = stable_id("chg", *[record[k] for k in sorted(record)])
    return record


def compare(old_rows: Iterable[dict[str, Any]], new_rows: Iterable[dict[str, Any]],
            releases: tuple[str, str]) -> list[dict[str, Any]]:
    """The changes from the element rows of one release to those of the next (sorted)."""
    before, after = documented(old_rows), documented(new_rows)
    commands_before, commands_after = commands(before), commands(after)
    changes: list[dict[str, Any]] = []
    for command in sorted(commands_before - commands_after):
        changes.append(_change("command_removed", before[(command, "")], None, releases))
    for command in sorted(commands_after - commands_before):
        changes.append(_change("command_added", None, after[(command, "")], releases))
    for key in sorted(set(before) | set(after)):
        command, option = key
        if not option or command not in commands_before & commands_after:
            continue  # a command's own place, or an option of a command added or removed
        old, new = before.get(key), after.get(key)
        if old is None or new is None:
            changes.append(_change("option_added" if old is None else "option_removed", old, new, releases))
            continue
        changes += _row_changes(old, new, releases)
    return sorted(changes, key=lambda c: (c["tool"], c["command"], c["option"], c["kind"]))


def _row_changes(old: Documented, new: Documented, releases: tuple[str, str]) -> list[dict[str, Any]]:
    if old.tool != new.tool:
        return [_change("moved", old, new, releases, old.tool, new.tool)]
    for kind, pattern in (("default_changed", DEFAULT), ("values_changed", ALLOWED)):
        was, now = stated(pattern, old.description), stated(pattern, new.description)
        if was and now and was.lower() != now.lower():  # both sides state one: a change of value
            return [_change(kind, old, new, releases, was, now)]
    if old.description != new.description:
        return [_change("description_changed", old, new, releases)]
    return []


def release_changes(elements: pl.DataFrame, releases: Sequence[str]) -> pl.DataFrame:
    """Every change between each two releases, older first (``releases`` ordered by date):
    the ``release_changes`` table."""
    rows_of: dict[str, list[dict[str, Any]]] = {name: [] for name in releases}
    columns = ["document", "ordinal", "element_type", "scope_command", "raw", "meta", "start_line", "end_line"]
    for row in elements.select(columns).iter_rows(named=True) if elements.height else []:
        head = key_release(row["document"])
        if head in rows_of:
            rows_of[head].append(row)
    changes: list[dict[str, Any]] = []
    for i, older in enumerate(releases):
        for newer in releases[i + 1:]:
            changes += compare(rows_of[older], rows_of[newer], (older, newer))
    return pl.DataFrame(changes, schema=CHANGES_SCHEMA) if changes else pl.DataFrame(schema=CHANGES_SCHEMA)


def side_item(row: dict[str, Any], side: str) -> EvidenceItem | None:
    """The ``old`` or ``new`` side of a change as an evidence item (None when it has none)."""
    if not row[f"{side}_doc"]:
        return None
    return EvidenceItem(chunk_id="", doc=row[f"{side}_doc"], text=row[f"{side}_text"], score=1.0,
                        path=f"release_changes:{row['kind']}", start_line=row[f"{side}_start"],
                        end_line=row[f"{side}_end"])


def as_record(row: dict[str, Any]) -> dict[str, Any]:
    """A change as ``edaqa changes --json`` gives it: both sides with their citations."""
    out = {k: row[k] for k in ("kind", "tool", "command", "option", "from_release", "to_release")}
    for side in ("old", "new"):
        if (item := side_item(row, side)) is not None:
            out[side] = {"citation": item.citation(), "text": item.text,
                         **({"value": row[f"{side}_value"]} if row[f"{side}_value"] else {})}
    return out
