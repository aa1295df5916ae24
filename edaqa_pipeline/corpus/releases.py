"""Releases: several versions of the same documentation in one storage root.

A storage root holds either one unnamed corpus (document keys are paths relative to its
folder) or named releases, each a corpus folder with a name and a date, registered in
``STORAGE/releases.json`` by ``edaqa index --release NAME --release-date YYYY-MM-DD``. A
document of a release is keyed ``NAME/PATH`` (``openroad-2024/cts.md``): its identity is
(release, path), its partition, stored rows and citations carry the release in that key, and
the release of any row is ``Releases.release_of(row["document"])``. One key string rather than
a second column keeps every table, partition and id as it is for a corpus of one release.

Releases are ordered by date (then name), whatever the order they were indexed in; the newest
is what a question that names no release is about. ``route`` reads the release a question
names ("in the 2024 docs", "as of March 2024", a release's name).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path

from edaqa_pipeline.corpus.scan import CorpusFile, CorpusScan, resolve_key, scan_corpus
from edaqa_pipeline.settings import Settings
from edaqa_pipeline.storage.atomic import write_json

RELEASES_FILE = "releases.json"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
# a year, with a month before it or after it, not part of a value, number or path (2024.1,
# 2024um, 2024-13)
YEAR_MENTION = re.compile(
    r"(?<![\w./=-])(?:(?P<month>" + "|".join(m[:3] + f"(?:{m[3:]})?" for m in MONTHS)
    + r")\.?\s+)?(?P<year>(?:19|20)\d\d)(?:-(?P<num_month>0[1-9]|1[0-2]))?"
    + r"(?![\w.-]|\s*(?:um|nm|ps|ns)\b|\s*%)",
    re.IGNORECASE)
# a year is a release's date only in words that say so: "in 2024", "as of 2025", "the 2024
# docs", "the manual of March 2024"; "seed 2024" or "a grid of 2024 x 2024" are numbers
DATE_BEFORE = re.compile(r"(?:\b(?:in|since|before|after|until|from|the)|\bas\s+of)\s+$", re.IGNORECASE)
DATE_AFTER = re.compile(r"\s+(?:docs?|documentation|manuals?|releases?|versions?|editions?|guides?)\b",
                        re.IGNORECASE)
YEARS_AHEAD = 5  # a later "year" is a number (a size, a count), not a release
# a name a question can give by itself: not a plain word, which may be the tool ("openroad")
DISTINCT_NAME = re.compile(r"[\d._-]")
# a question about a change between releases, whatever release it names ("what changed in
# CTS?", "is -x still supported?", "which options were removed ...?")
ASKS_CHANGE = re.compile(r"\bwhat(?:'s|\s+has|\s+have)?\s+changed\b|\bstill\s+(?:supported|available|exists?|there|documented)\b"
                         r"|\bchanged\s+(?:between|since)\b|\b(?:was|were|been|got)\s+(?:added|removed|dropped|"
                         r"renamed|deprecated|changed)\b|\bhas\s+\S+\s+changed\b", re.IGNORECASE)
# words that, between two releases it names, make a question one about a change
MENTIONS_CHANGE = re.compile(r"\b(?:chang\w*|differ\w*|removed|added|new|renamed|deprecated|since)\b",
                             re.IGNORECASE)
# right before the one release a question names: "since (the) 2024 ...", "new in 2026"
SINCE_BEFORE = re.compile(r"\b(?:since|after)\s+(?:the\s+)?$", re.IGNORECASE)
CHANGED_IN_BEFORE = re.compile(r"\b(?:new|added|removed|dropped|changed|deprecated|renamed)\s+(?:in|from)\s+"
                               r"(?:the\s+)?$", re.IGNORECASE)


def release_key(release: str, path: str) -> str:
    """The document key of ``path`` (relative to its release's folder) in ``release``."""
    return f"{release}/{path}"


def key_release(key: str) -> str:
    """The release part of a release's document key ("" for a key without one)."""
    return key.split("/", 1)[0] if "/" in key else ""


class ReleaseError(ValueError):
    """A bad release name, date or registry, or a request for a release that is not there."""


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ReleaseError(f"release name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
                           "starting with a letter or digit")
    return name


def check_date(date: str) -> str:
    """``date`` as ``YYYY-MM-DD`` (the release's date orders releases), or ``ReleaseError``."""
    try:
        return dt.date.fromisoformat(date).isoformat() if len(str(date)) == 10 else _bad_date(date)
    except (TypeError, ValueError):
        return _bad_date(date)


def _bad_date(date: object) -> str:
    raise ReleaseError(f"release date {date!r}: give it as YYYY-MM-DD (e.g. 2024-03-01)")


@dataclass(frozen=True)
class Release:
    name: str
    date: str  # YYYY-MM-DD
    root: Path  # the corpus folder the release is indexed from

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "date": self.date, "root": str(self.root)}


@dataclass(frozen=True)
class Releases:
    """The releases of a storage root, oldest first (empty: one unnamed corpus)."""

    items: tuple[Release, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.items)

    @classmethod
    def load(cls, storage: Path) -> Releases:
        path = Path(storage) / RELEASES_FILE
        if not path.is_file():
            return cls()
        try:
            rows = json.loads(path.read_text())["releases"]
            items = [Release(check_name(r["name"]), check_date(r["date"]), Path(r["root"])) for r in rows]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ReleaseError(f"{path}: not a release registry ({exc}); fix or remove it") from None
        return cls._sorted(items)

    @classmethod
    def _sorted(cls, items: list[Release]) -> Releases:
        return cls(tuple(sorted(items, key=lambda r: (r.date, r.name))))

    def save(self, storage: Path) -> None:
        Path(storage).mkdir(parents=True, exist_ok=True)
        write_json(Path(storage) / RELEASES_FILE, {"releases": [r.to_json() for r in self.items]},
                   indent=2, sort_keys=True)

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.items]

    @property
    def newest(self) -> str | None:
        return self.items[-1].name if self.items else None

    def get(self, name: str) -> Release:
        for release in self.items:
            if release.name == name:
                return release
        known = ", ".join(self.names) or "none (the storage root holds one unnamed corpus)"
        raise ReleaseError(f"no release {name!r} here; releases: {known}")

    def with_release(self, release: Release) -> Releases:
        """These releases with ``release`` added, or replacing the one of its name."""
        return self._sorted([r for r in self.items if r.name != release.name] + [release])

    def without(self, name: str) -> Releases:
        self.get(name)
        return Releases(tuple(r for r in self.items if r.name != name))

    def release_of(self, key: str) -> str | None:
        """The release of a document key (None for a corpus without releases)."""
        head = key_release(key)
        return head if head in self.names else None

    def documents_of(self, name: str, documents: list[str]) -> list[str]:
        return [d for d in documents if self.release_of(d) == name]

    def counterparts(self, keys: list[str]) -> list[str]:
        """The keys of the same paths in the other releases (``a/cts.md`` -> ``b/cts.md``)."""
        out: list[str] = []
        for key in keys:
            name = self.release_of(key)
            if name is not None:
                rest = key.split("/", 1)[1]
                out += [release_key(other, rest) for other in self.names if other != name]
        return sorted(set(out) - set(keys))

    def path_of(self, key: str) -> Path:
        """The file of a document key of a release (``UnsafePathError`` for a key that
        would leave its folder, ``ReleaseError`` for a key of no release)."""
        name, _, rest = key.partition("/")
        return resolve_key(self.get(name).root, rest)

    def scan(self) -> CorpusScan:
        """Every release's folder scanned, keys prefixed with the release's name."""
        files: list[CorpusFile] = []
        refused: list[tuple[str, str]] = []
        skipped: list[tuple[str, str]] = []
        for release in self.items:
            if not release.root.is_dir():
                raise ReleaseError(f"release {release.name!r}: its folder {release.root} does not "
                                   f"exist; restore it, or drop the release with `edaqa releases "
                                   f"--remove {release.name}`")
            found = scan_corpus(release.root)
            files += [CorpusFile(release_key(release.name, f.key), f.path, f.sha256, f.n_bytes) for f in found.files]
            refused += [(release_key(release.name, n), p) for n, p in found.refused]
            skipped += [(release_key(release.name, n), t) for n, t in found.skipped]
        return CorpusScan(sorted(files, key=lambda f: f.key), refused, skipped)

    def route(self, question: str) -> str | None:
        """The release ``question`` names: a release's name, or a date ("2024", "March
        2024", "2024-03"): the newest release dated in that period, else the newest before
        its end ("as of 2025"). None when it names none, or names several (a question about
        what changed between two releases)."""
        dated = {found for match in YEAR_MENTION.finditer(question)
                 if self._is_date(question, match) and (found := self._as_of(match))}
        if dated:  # a date outweighs a name that is also a word ("run openroad in the 2024 docs")
            return dated.pop() if len(dated) == 1 else None
        named = {r.name for r in self.items if DISTINCT_NAME.search(r.name)
                 and re.search(rf"(?<![\w-]){re.escape(r.name)}(?![\w-])", question)}
        return named.pop() if len(named) == 1 else None

    def mentions(self, question: str) -> list[tuple[str, int]]:
        """(release, where in ``question``) of every release it names, by a date or a
        distinct name, in the order of the question."""
        found = [(name, match.start()) for match in YEAR_MENTION.finditer(question)
                 if self._is_date(question, match) and (name := self._as_of(match))]
        for release in self.items:
            if DISTINCT_NAME.search(release.name):
                found += [(release.name, m.start()) for m in
                          re.finditer(rf"(?<![\w-]){re.escape(release.name)}(?![\w-])", question)]
        return sorted(found, key=lambda f: f[1])

    def change_pair(self, question: str) -> tuple[str, str] | None:
        """(older, newer) when ``question`` asks what changed between two releases, else None.

        Two releases named with a word of change between them ("how did -x differ between 2024
        and 2026"): those two. One release right after "since" ("what changed since the 2024
        docs"): it and the newest. One release after "new in" / "removed from", or in a question
        that asks about a change by itself ("is -x still supported in the 2026 docs?"): the
        release before it and it. None named, in such a question ("what changed in CTS?"): the
        two newest. Any other question, however it uses "change" or "new" ("how do I change the
        clock period?", "in the 2024 docs, how many buffers are added?"), is not one."""
        if len(self.items) < 2:
            return None
        mentions = self.mentions(question)
        named = [n for n in self.names if n in {name for name, _ in mentions}]
        if len(named) >= 2:
            return (named[0], named[-1]) if MENTIONS_CHANGE.search(question) else None
        asks = bool(ASKS_CHANGE.search(question))
        if not named:
            return (self.names[-2], self.names[-1]) if asks else None
        name, at = next(m for m in mentions if m[0] == named[0])
        position = self.names.index(name)
        if SINCE_BEFORE.search(question[:at]):
            return (name, self.names[-1]) if position < len(self.names) - 1 else None
        if (asks or CHANGED_IN_BEFORE.search(question[:at])) and position > 0:
            return self.names[position - 1], name
        return None

    def _is_date(self, question: str, match: re.Match[str]) -> bool:
        month = match.group("month")
        if month == "may":  # "how many cells may 2025 designs use": the verb, not the month
            month = None
        said = bool(month or match.group("num_month") or DATE_BEFORE.search(question[:match.start()])
                    or DATE_AFTER.match(question, match.end()))
        newest = int(self.items[-1].date[:4]) if self.items else 0
        return said and int(match.group("year")) <= newest + YEARS_AHEAD

    def _as_of(self, match: re.Match[str]) -> str | None:
        year = match.group("year")
        month = match.group("num_month")
        if match.group("month"):
            month = f"{[m[:3] for m in MONTHS].index(match.group('month')[:3].lower()) + 1:02d}"
        period = f"{year}-{month}" if month else year
        inside = [r for r in self.items if r.date.startswith(period)]
        if inside:
            return inside[-1].name
        before = [r for r in self.items if r.date[:len(period)] < period]
        return before[-1].name if before else None


def document_path(cfg: Settings, key: str) -> Path:
    """The file of a document key: under its release's folder when the storage root holds
    releases, else under the corpus folder (``UnsafePathError`` for a key that leaves it)."""
    releases = Releases.load(cfg.storage_root)
    return releases.path_of(key) if releases else resolve_key(cfg.corpus_root, key)


def scan_documents(cfg: Settings) -> CorpusScan:
    """The documents to index: every release's folder, or the corpus folder."""
    releases = Releases.load(cfg.storage_root)
    return releases.scan() if releases else scan_corpus(cfg.corpus_root)
