"""How often the claim verifier accepts a true claim and rejects a tampered one.

Claims are derived from the structure of indexed corpora (the stored chunks and their line
kinds), each citing the chunk it comes from, the evidence an answer would cite:

* ``default``: option or ORFS variable -> its default (a table row that states one: a
  ``Default`` column, or "The default value is ...");
* ``meaning``: option, variable or message id -> the first clause of its description;
* ``synopsis``: command -> an option its synopsis code block lists;
* ``property``: a datasheet table row -> a value with its unit (PDF tables).

Each true claim gets tampered variants, each one a false statement citing the same chunk:
``neighbour_value`` (the default of a neighbouring row of the same table), ``neighbour_option``
(a neighbouring row's option with this row's default), ``other_command`` (the option joined to
a command of another manual), ``digit`` (one digit of the value changed) and ``unit`` (the
unit changed to one of another dimension); for datasheet values also ``sign`` (a negative
value with its minus dropped) and ``prefix`` (the unit's prefix swapped for one it is misread
as: mA / µA, MΩ / mΩ, µm / mm). A variant that happens to be true (the neighbouring
row has the same default) is not generated.

An indexed storage root also gives each chunk's lines the command their section documents
(the element graph's scope command), as an answer's evidence carries them. With
``--recite-window N`` a claim that fails on its chunk is tried again against the chunks of
the same document up to N places either side, pooled, as an answer re-cites a model's claim
to another item of the manual it cites: the rejection figures then say what re-citation costs.

The claims are templated from the same structure the verifier reads, so the acceptance of
true claims is close to true by construction (it measures that the verifier does not reject
what a unit plainly states); the rejection of tampered claims is the figure that says whether
"verified" can be trusted. Model-written paraphrases are measured by ``benchmarks/answers.py``.

    .venv/bin/python benchmarks/verify_claims.py --storage /tmp/edaqa_matrix/or26 --storage /tmp/ds
    .venv/bin/python benchmarks/verify_claims.py --storage /tmp/edaqa_matrix/or26 --recite-window 4
    .venv/bin/python benchmarks/verify_claims.py --corpus ../shared/corpus/openroad --corpus ../shared/corpus/datasheets
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edaqa_pipeline.generation.units import TextUnit, text_units  # noqa: E402
from edaqa_pipeline.generation.verify import stated_default, verify_claim  # noqa: E402
from edaqa_pipeline.text.identifiers import extract_identifiers, identifier_kind  # noqa: E402
from edaqa_pipeline.text.markup import table_cells  # noqa: E402
from edaqa_pipeline.text.quantities import normalised_unit  # noqa: E402
from edaqa_pipeline.text.tokens import content_terms  # noqa: E402

TAMPERS = ("neighbour_value", "neighbour_option", "other_command", "digit", "unit", "sign", "prefix")
# a unit with its prefix swapped for one a reader can misread it as (mA / µA, MΩ / mΩ, µm / mm)
_OTHER_PREFIX = {"m": "µ", "µ": "m", "u": "m", "M": "m", "k": "M", "n": "µ", "p": "n"}
_IN_UNIT = re.compile(r"\(in (microns|um|nanoseconds|ns|picoseconds|ps|percent|%)\)", re.IGNORECASE)
_OTHER_UNIT = {"microns": "ns", "um": "ns", "nanoseconds": "microns", "ns": "microns",
               "picoseconds": "microns", "ps": "microns", "percent": "ns", "%": "ns",
               "v": "ma", "ma": "v", "ua": "mv", "mv": "ua", "mhz": "ns",
               "pf": "ns", "ff": "ns", "ohm": "pf", "°c": "v", "w": "v", "mw": "ma"}
_NUMERIC = re.compile(r"^[-+]?\d+(?:\.\d+)?$")


@dataclass(frozen=True)
class Chunk:
    document: str
    text: str
    line_kinds: tuple[str, ...]
    pdf: bool
    # the command each line's section documents (an indexed storage root's element graph)
    line_subjects: tuple[str, ...] = ()


@dataclass(frozen=True)
class Claim:
    corpus: str
    kind: str  # default | meaning | synopsis | property
    tamper: str  # "" for a true claim, else one of TAMPERS
    text: str
    chunk: int  # index of the cited chunk


def load_chunks(storage: Path) -> list[Chunk]:
    from edaqa_pipeline.retrieval.line_structure import LineStructure
    from edaqa_pipeline.retrieval.snapshot import indexed_documents, scope_rows
    from edaqa_pipeline.storage.tables import read_partitions

    frame = read_partitions(storage / "tables", "chunks", indexed_documents(storage))
    if frame is None or "line_kinds" not in frame.columns:
        raise SystemExit(f"{storage}: no chunks with line kinds (re-index it with edaqa index)")
    # the command each line's section documents, as an answer's evidence carries it
    # (IndexSnapshot.chunk_subjects, without loading the vectors)
    lines = LineStructure({}).with_subjects(scope_rows(storage, indexed_documents(storage)))
    return [Chunk(r["document"], r["text"], tuple(r["line_kinds"]), r["page"] is not None,
                  lines.subjects(r["document"], range(r["start_line"], r["end_line"] + 1))
                  if r["start_line"] is not None and r["end_line"] is not None else ())
            for r in frame.select("document", "text", "line_kinds", "page", "start_line", "end_line").to_dicts()]


def parse_chunks(corpus: Path) -> list[Chunk]:
    """The chunks ``edaqa index`` would store for ``corpus``, by the same parser and chunker
    (no storage root needed)."""
    from edaqa_pipeline.extraction.chunks import build_chunks
    from edaqa_pipeline.parsing.markdown import parse_markdown
    from edaqa_pipeline.parsing.pdf import parse_pdf

    out = []
    for path in sorted(corpus.rglob("*")):
        parse = {".md": parse_markdown, ".pdf": parse_pdf}.get(path.suffix.lower())
        if parse is None or not path.is_file():
            continue
        _, blocks = parse(path.read_bytes(), path.relative_to(corpus).as_posix())
        out += [Chunk(c["document"], c["text"], tuple(c["line_kinds"]), c["page"] is not None)
                for c in build_chunks(blocks)]
    return out


def _stable_index(name: str, n: int) -> int:
    """An index in ``range(n)`` fixed by ``name`` (Python's ``hash`` of a string changes from
    run to run, and with it the sample of tampered claims)."""
    return zlib.crc32(name.encode()) % n


def _key(cell: str) -> str:
    return cell.strip().strip("`*[] ").split()[0] if cell.strip().strip("`*[] ") else ""


def _named(cell: str) -> str:
    """The option, variable or message id a row's first cell names ("" when none)."""
    key = _key(cell)
    ids = extract_identifiers(f"`{key}`") if key else []
    return ids[0] if ids and identifier_kind(ids[0]) in ("option", "variable", "message") else ""


def _digit(value: str) -> str:
    last = max(i for i, c in enumerate(value) if c.isdigit())
    return value[:last] + str((int(value[last]) + 1) % 10) + value[last + 1:]


def _first_clause(text: str) -> str:
    text = re.sub(r"`([^`]*)`", r"\1", text).strip()
    clause = re.split(r"(?<=[.;])\s", text, maxsplit=1)[0].rstrip(".;")
    return clause if 3 <= len(clause.split()) <= 25 else ""


def claims_of(corpus: str, chunks: Sequence[Chunk], commands: Sequence[str]) -> Iterator[Claim]:
    """True claims and their tampered variants (module docstring)."""
    for n, chunk in enumerate(chunks):
        units = text_units(chunk.text, chunk.line_kinds)
        rows = [u for u in units if u.kind == "row" and u.cells]
        named = {id(u): _named(u.cells[0]) for u in rows}
        text_lower = chunk.text.lower()
        others = [c for c in commands if c.lower() not in text_lower and not any(c in h for u in units for h in u.headings)]
        for i, row in enumerate(rows):
            name = named[id(row)]
            if not name:
                continue
            neighbours = [r for r in rows[max(0, i - 2): i + 3] if r is not row and named[id(r)]]
            default = stated_default(row)
            if default and not chunk.pdf:
                yield from _default_claims(corpus, n, row, name, default, neighbours, named, others)
            meaning = _first_clause(row.cells[1]) if len(row.cells) > 1 else ""
            if meaning and not chunk.pdf:
                yield Claim(corpus, "meaning", "", f"`{name}`: {meaning}.", n)
                for other in neighbours[:1]:
                    theirs = set(content_terms(other.cells[1])) if len(other.cells) > 1 else set()
                    ours = set(content_terms(row.cells[1]))
                    # a neighbour described in the same words would make the variant true
                    if named[id(other)] != name and len(theirs & ours) < 0.8 * max(len(ours), 1):
                        yield Claim(corpus, "meaning", "neighbour_option", f"`{named[id(other)]}`: {meaning}.", n)
        if chunk.pdf:
            yield from _property_claims(corpus, n, rows)
        yield from _synopsis_claims(corpus, n, units, others)


def _default_claims(corpus: str, n: int, row: TextUnit, name: str, default: str,
                    neighbours: Sequence[TextUnit], named: dict[int, str], others: Sequence[str]) -> Iterator[Claim]:
    unit = _IN_UNIT.search(row.text)
    suffix = f" {unit.group(1)}" if unit and _NUMERIC.match(default) else ""
    yield Claim(corpus, "default", "", f"The default of `{name}` is `{default}`{suffix}.", n)
    for other in neighbours:
        other_default = stated_default(other)
        if other_default and other_default != default:
            yield Claim(corpus, "default", "neighbour_value", f"The default of `{name}` is `{other_default}`{suffix}.", n)
            break
    for other in neighbours:
        if named[id(other)] != name and stated_default(other) not in ("", default):
            yield Claim(corpus, "default", "neighbour_option", f"The default of `{named[id(other)]}` is `{default}`{suffix}.", n)
            break
    if others and name.startswith("-"):
        command = others[_stable_index(name, len(others))]
        yield Claim(corpus, "default", "other_command", f"The default of `{name}` of `{command}` is `{default}`{suffix}.", n)
    if _NUMERIC.match(default):
        yield Claim(corpus, "default", "digit", f"The default of `{name}` is `{_digit(default)}`{suffix}.", n)
    if suffix:
        yield Claim(corpus, "default", "unit", f"The default of `{name}` is `{default}` {_OTHER_UNIT[unit.group(1).lower()]}.", n)


def _synopsis_claims(corpus: str, n: int, units: Sequence[TextUnit], others: Sequence[str]) -> Iterator[Claim]:
    blocks: dict[int, list[TextUnit]] = defaultdict(list)
    for u in units:
        if u.kind == "code":
            blocks[u.block].append(u)
    for lines in blocks.values():
        head = extract_identifiers(lines[0].text, code=True)
        if not head or identifier_kind(head[0]) != "command" or len(lines) < 2:
            continue
        command = head[0]
        options = [o for line in lines for o in extract_identifiers(line.text, code=True) if o.startswith("-")]
        for option in list(dict.fromkeys(options))[:3]:
            yield Claim(corpus, "synopsis", "", f"`{command}` takes the option `{option}`.", n)
            if others:
                yield Claim(corpus, "synopsis", "other_command",
                            f"`{others[_stable_index(option, len(others))]}` takes the option `{option}`.", n)


def _property_claims(corpus: str, n: int, rows: Sequence[TextUnit]) -> Iterator[Claim]:
    for i, row in enumerate(rows):
        header = [h.lower() for h in table_cells(row.header)] if row.header else []
        if "unit" not in " ".join(header) or len(row.cells) != len(header):
            continue
        unit_col = next(j for j, h in enumerate(header) if "unit" in h)
        unit = row.cells[unit_col].strip()
        name = row.cells[0].strip()
        for j, h in enumerate(header):
            value = row.cells[j].strip()
            if j in (0, unit_col) or not _NUMERIC.match(value) or not unit or not name:
                continue
            label = h or "value"
            yield Claim(corpus, "property", "", f"The {label} {name} is {value} {unit}.", n)
            yield Claim(corpus, "property", "digit", f"The {label} {name} is {_digit(value)} {unit}.", n)
            if value.startswith("-"):  # the sign dropped: -0.53 V is not 0.53 V
                yield Claim(corpus, "property", "sign", f"The {label} {name} is {value[1:]} {unit}.", n)
            swapped = _OTHER_PREFIX.get(unit[:1], "") + unit[1:]
            if len(unit) > 1 and normalised_unit(swapped) not in ("", normalised_unit(unit)):
                yield Claim(corpus, "property", "prefix", f"The {label} {name} is {value} {swapped}.", n)
            other_unit = _OTHER_UNIT.get(unit.lower().replace("µ", "u"))
            if other_unit:
                yield Claim(corpus, "property", "unit", f"The {label} {name} is {value} {other_unit}.", n)
            for other in (rows[i - 1] if i else None, rows[i + 1] if i + 1 < len(rows) else None):
                if other is not None and len(other.cells) == len(header) and _NUMERIC.match(other.cells[j].strip()) \
                        and other.cells[j].strip() != value:
                    yield Claim(corpus, "property", "neighbour_value", f"The {label} {name} is {other.cells[j].strip()} {unit}.", n)
                    break
            break  # one column per row


def commands_of(chunks: Iterable[Chunk]) -> list[str]:
    found: Counter[str] = Counter()
    for chunk in chunks:
        for line, kind in zip(chunk.text.split("\n"), chunk.line_kinds, strict=True):
            if kind == "code":
                head = extract_identifiers(line, code=True)[:1]
                found.update(h for h in head if identifier_kind(h) == "command")
    return sorted(c for c, k in found.items() if k >= 2)


def evaluate(claims: Sequence[Claim], chunks: dict[str, Sequence[Chunk]],
             window: int = 0) -> list[tuple[Claim, bool, str]]:
    """Each claim's verdict against its chunk; with ``window``, a claim that fails there is
    verified again against its chunk and the chunks of the same document up to ``window``
    places either side, pooled, one unit per claim, and counts as accepted when a unit of
    another chunk states it: as the answer re-cites a model's claim (``claim_verdicts.recited``)."""
    out = []
    cache: dict[tuple[str, int], list[TextUnit]] = {}

    def units(corpus: str, n: int) -> list[TextUnit]:
        if (corpus, n) not in cache:
            c = chunks[corpus][n]
            cache[(corpus, n)] = text_units(c.text, c.line_kinds, c.line_subjects)
        return cache[(corpus, n)]

    for claim in claims:
        verdict = verify_claim(claim.text, [("E1", units(claim.corpus, claim.chunk))])
        if not verdict.verified and window:
            own = chunks[claim.corpus]
            near = [j for j in range(claim.chunk - window, claim.chunk + window + 1)
                    if 0 <= j < len(own) and own[j].document == own[claim.chunk].document]
            pooled = verify_claim(claim.text, [(f"E{j}", units(claim.corpus, j)) for j in near], compare=False)
            if pooled.verified and any(b.evidence_id != f"E{claim.chunk}" for b in pooled.bindings):
                verdict = pooled
        out.append((claim, verdict.verified, verdict.reason))
    return out


def report(results: Sequence[tuple[Claim, bool, str]]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for corpus in dict.fromkeys(c.corpus for c, _, _ in results):
        rows = [(c, ok) for c, ok, _ in results if c.corpus == corpus]
        true = [ok for c, ok in rows if not c.tamper]
        entry = {"true_claims": len(true), "true_accepted": sum(true) / max(len(true), 1)}
        tampered = [ok for c, ok in rows if c.tamper]
        entry["tampered"] = len(tampered)
        entry["tampered_rejected"] = 1 - sum(tampered) / max(len(tampered), 1)
        for kind in TAMPERS:
            these = [ok for c, ok in rows if c.tamper == kind]
            if these:
                entry[f"{kind}_rejected"] = 1 - sum(these) / len(these)
                entry[f"{kind}_n"] = len(these)
        for kind in ("default", "meaning", "synopsis", "property"):
            these = [ok for c, ok in rows if c.kind == kind and not c.tamper]
            if these:
                entry[f"{kind}_accepted"] = sum(these) / len(these)
                entry[f"{kind}_n"] = len(these)
        table[corpus] = entry
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--storage", action="append", default=[], type=Path,
                        help="an indexed storage root (repeat for several corpora)")
    parser.add_argument("--corpus", action="append", default=[], type=Path,
                        help="a corpus folder, parsed and chunked as edaqa index does")
    parser.add_argument("--failures", type=int, default=5, help="show this many misjudged claims per kind")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    parser.add_argument("--recite-window", type=int, default=0,
                        help="also try the chunks of the same document this many places either side, "
                             "as an answer re-cites a model's claim to the item of its manual that states it")
    args = parser.parse_args()
    started = time.perf_counter()
    chunks = {s.name: load_chunks(s) for s in args.storage}
    chunks |= {c.name: parse_chunks(c) for c in args.corpus}
    claims = [c for name, cs in chunks.items() for c in claims_of(name, cs, commands_of(cs))]
    results = evaluate(claims, chunks, args.recite_window)
    table = report(results)
    print(f"{len(claims)} claims in {time.perf_counter() - started:.1f} s")
    for corpus, entry in table.items():
        print(f"\n{corpus}: true claims {entry['true_claims']}, accepted {entry['true_accepted']:.3f}; "
              f"tampered {entry['tampered']}, rejected {entry['tampered_rejected']:.3f}")
        for kind in ("default", "meaning", "synopsis", "property"):
            if f"{kind}_n" in entry:
                print(f"  true {kind:<10} {int(entry[f'{kind}_n']):>5}  accepted {entry[f'{kind}_accepted']:.3f}")
        for kind in TAMPERS:
            if f"{kind}_n" in entry:
                print(f"  tamper {kind:<17} {int(entry[f'{kind}_n']):>5}  rejected {entry[f'{kind}_rejected']:.3f}")
    for label, bad in (("true claims rejected", [(c, r) for c, ok, r in results if not c.tamper and not ok]),
                       ("tampered claims accepted", [(c, r) for c, ok, r in results if c.tamper and ok])):
        shown: Counter[str] = Counter()
        if bad:
            print(f"\n{label} (first {args.failures} per kind):")
        for claim, reason in bad:
            kind = claim.tamper or claim.kind
            if shown[kind] < args.failures:
                shown[kind] += 1
                print(f"  [{claim.corpus} {kind}] {claim.text}  <- {reason or 'accepted'}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
