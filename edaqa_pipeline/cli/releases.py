"""Releases on the command line: ``edaqa index --release NAME --release-date DATE`` and
``edaqa releases``.

``index --release`` registers (or refreshes) one release of a storage root in its
``releases.json`` (``corpus.releases``) and then indexes like any other ``index``: the scan
covers every registered release, so documents of the other releases stay as they are and only
the new or changed release's documents are built. A storage root holds either one corpus
indexed without ``--release`` or named releases, never both: mixing them would leave documents
of no release that a pinned question could neither reach nor exclude.

``edaqa releases`` lists the releases (name, date, documents, folder); ``--remove NAME``
drops one and re-indexes, so the tables then equal a build without it. ``edaqa changes``
prints what changed between two of them (``service.changes``), both sides cited.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from edaqa_pipeline.corpus.releases import Release, ReleaseError, Releases, check_date, check_name


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--release", default=None, metavar="NAME",
                        help="index the corpus as release NAME of the storage root (several "
                        "releases of the same manuals live side by side; questions are pinned "
                        "to one, the newest by default)")
    parser.add_argument("--release-date", default=None, metavar="YYYY-MM-DD",
                        help="the release's date (orders releases; needed when NAME is new)")


def manifest_of(storage: Path) -> dict[str, Any]:
    """The storage root's last ``manifest.json`` ({} before a first build)."""
    try:
        return dict(json.loads((storage / "manifest.json").read_text()))
    except (OSError, ValueError):
        return {}


def indexed_documents(storage: Path) -> list[str]:
    return list(manifest_of(storage).get("documents", []))


def register_release(corpus: Path, storage: Path, name: str | None, date: str | None) -> bool:
    """Check the ``--release`` flags against the storage root and record the release
    (``ReleaseError`` with what is wrong); without ``--release`` nothing is recorded.
    Returns whether the release is new."""
    releases = Releases.load(storage)
    if name is None:
        if date is not None:
            raise ReleaseError("--release-date needs --release NAME")
        if releases:
            raise ReleaseError(f"{storage} holds releases ({', '.join(releases.names)}): name the "
                               "release this corpus is with --release NAME")
        return False
    name = check_name(name)
    built = manifest_of(storage)
    if built.get("documents") and not built.get("releases"):  # the last build had no release
        raise ReleaseError(f"{storage} holds a corpus indexed without --release "
                           f"({len(built['documents'])} documents): index releases into a new storage root")
    known = {r.name: r for r in releases.items}
    if date is None and name not in known:
        raise ReleaseError(f"release {name!r} is new: give its date with --release-date YYYY-MM-DD")
    release = Release(name, check_date(date) if date else known[name].date, corpus.resolve())
    if not corpus.is_dir():
        raise ReleaseError(f"corpus folder {corpus} does not exist")
    for other in releases.items:
        if other.name != name and other.root == release.root:
            raise ReleaseError(f"{corpus} is already release {other.name!r} of {storage}")
    releases.with_release(release).save(storage)
    return name not in known


def check_indexed(storage: Path, name: str, documents: list[str], was_new: bool) -> str | None:
    """Why release ``name`` is not usable after its build (None when it is): a release with
    no indexed document would be the newest and answer every question from nothing, so a
    new one is unregistered again."""
    releases = Releases.load(storage)
    if releases.documents_of(name, documents):
        return None
    if was_new:
        releases.without(name).save(storage)
    return (f"release {name!r} has no indexed document (see the failures and skipped files "
            f"above){'; it was not registered' if was_new else ''}")


def _remove(storage: Path, releases: Releases, name: str) -> Releases:
    """Drop release ``name`` and re-index the rest; the registry is restored when the
    re-index does not finish, so a failed or interrupted removal can be run again."""
    if releases.names == [name]:
        raise ReleaseError(f"{name!r} is the only release of {storage}: remove the storage root instead")
    remaining = releases.without(name)
    remaining.save(storage)
    from edaqa_pipeline.cli.index import index_corpus

    try:
        report = index_corpus(remaining.items[-1].root, storage, log=lambda *_: None)
    except BaseException:
        releases.save(storage)
        raise
    print(f"removed release {name} ({len(report.deleted)} documents) from {storage}")
    return remaining


def _cmd_releases(args: argparse.Namespace) -> int:
    storage = Path(args.storage)
    try:
        releases = Releases.load(storage)
        if args.remove:
            releases = _remove(storage, releases, args.remove)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    documents = indexed_documents(storage)
    rows = [{**r.to_json(), "documents": len(releases.documents_of(r.name, documents)),
             "newest": r.name == releases.newest} for r in releases.items]
    if args.json:
        print(json.dumps({"storage": str(storage), "releases": rows}, indent=2))
    elif not rows:
        print(f"{storage} holds one corpus indexed without --release ({len(documents)} documents)")
    for row in [] if args.json else rows:
        mark = "  (newest: the default)" if row["newest"] else ""
        print(f"{row['name']:<20} {row['date']}  {row['documents']:>4} documents  {row['root']}{mark}")
    return 0


def add_releases_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from edaqa_pipeline.cli.query import storage_argument

    p = sub.add_parser("releases", help="list the releases of a storage root (or remove one)")
    storage_argument(p)
    p.add_argument("--remove", default=None, metavar="NAME",
                   help="remove release NAME and re-index: the storage then equals one built without it")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_releases)
    add_changes_command(sub)


CHANGE_WORDS = {"command_added": "added", "command_removed": "removed", "option_added": "added",
                "option_removed": "removed", "moved": "moved to another manual",
                "default_changed": "default changed", "values_changed": "allowed values changed",
                "description_changed": "description changed"}
SHOWN_CHARS = 150  # of each cited row; --json gives them whole


def _side(label: str, side: dict[str, Any] | None) -> str:
    if side is None:
        return ""
    text = " ".join(side["text"].split())
    text = text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 3] + "..."
    return f"      {label} [{side['citation']}] {text}\n"


def _cmd_changes(args: argparse.Namespace) -> int:
    from edaqa_pipeline import service
    from edaqa_pipeline.service.changes import change_values, release_changes

    try:
        report = release_changes(args.storage, args.from_, args.to, tool=args.tool,
                                 command=args.command, option=args.option)
    except service.ServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    old, new = report["from"], report["to"]
    narrowed = "".join(f", {k} {v}" for k, v in report["filters"].items())
    print(f"What changed from {old['name']} ({old['date']}) to {new['name']} ({new['date']}){narrowed}: "
          f"{len(report['changes'])} changes ({', '.join(f'{k} {n}' for k, n in report['counts'].items()) or 'none'})")
    command = None
    for change in report["changes"]:
        if (change["tool"], change["command"]) != command:
            command = (change["tool"], change["command"])
            print(f"\n{change['command']} ({change['tool']})")
        print(f"  {change['option'] or 'the command'} {CHANGE_WORDS[change['kind']]}{change_values(change)}")
        sys.stdout.write(_side("was", change.get("old")) + _side("now", change.get("new")))
    return 0


def add_changes_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from edaqa_pipeline.cli.query import storage_argument

    p = sub.add_parser("changes", help="what changed between two releases, both sides cited")
    storage_argument(p)
    p.add_argument("--from", dest="from_", default=None, metavar="RELEASE",
                   help="the older release (default: the one before --to)")
    p.add_argument("--to", default=None, metavar="RELEASE", help="the newer release (default: the newest)")
    p.add_argument("--tool", default=None, help="one manual, by name: cts, gpl, grt, ...")
    p.add_argument("--command", default=None, help="one command, e.g. clock_tree_synthesis")
    p.add_argument("--option", default=None, help="one option, e.g. -sink_clustering_size")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_changes)
