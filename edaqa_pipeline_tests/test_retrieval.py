"""Retrievers on real indexes (real MiniLM vectors, real LanceDB), fusion maths, idempotent
index writes, deletions, and citations that point at the lines they quote."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from edaqa_pipeline.cli.index import index_corpus
from edaqa_pipeline.generation.answer import answer_question
from edaqa_pipeline.generation.claims import ungrounded_terms
from edaqa_pipeline.methods.fa.retriever import FunctionAwareRetriever
from edaqa_pipeline.registry import make_retriever
from edaqa_pipeline.retrieval import lance_store
from edaqa_pipeline.retrieval.fusion import fused_score, rrf
from edaqa_pipeline.retrieval.snapshot import IndexSnapshot, NotIndexedError
from edaqa_pipeline.retrieval.topk import top_k
from edaqa_pipeline_tests.fixtures_index import SAMPLE

# The chunk/unit methods of the primary paper (the other papers' methods need their own
# graphs, built by `edaqa index --with ...`, and have their own test files).
CORE_METHODS = ["edaqa", "bm25", "dense", "hybrid_rrf", "fa_units", "fa_hybrid"]


def test_fused_score_is_equation_5() -> None:
    assert fused_score(0.5, 0.8) == pytest.approx(0.4 * 0.5 + 0.6 * 0.8)
    assert fused_score(0.5, 0.8, alpha=1.0) == pytest.approx(0.5)


def test_reciprocal_rank_fusion_by_hand() -> None:
    scores = rrf([[7, 3], [3, 9]], k=60)
    assert scores[7] == pytest.approx(1 / 61)
    assert scores[3] == pytest.approx(1 / 62 + 1 / 61)
    assert scores[9] == pytest.approx(1 / 62)


def test_packing_gives_no_slot_to_a_fragment() -> None:
    """A lone heading or list entry (shorter than ``min_chars``) takes none of the k slots, and
    its candidate's next alternative is tried; longer items pack in order, overlap-checked."""
    from edaqa_pipeline.model import EvidenceItem
    from edaqa_pipeline.retrieval.packing import Candidate
    from edaqa_pipeline.retrieval.packing import pack_candidates as pack

    def item(doc: str, start: int, end: int, text: str) -> EvidenceItem:
        return EvidenceItem(chunk_id="", doc=doc, text=text, score=1.0, path="t",
                            start_line=start, end_line=end)

    heading = item("a.md", 9, 9, "### Usage")
    row = item("a.md", 12, 12, "| `-max_length` | Longest wire a net may have before a buffer is added, in microns. Default: 1000. |")
    block = item("b.md", 1, 6, "x" * 200)
    fragment_then_row = Candidate([item("c.md", 3, 3, "- `foo`"), row], 3.0)
    candidates = [Candidate([heading], 4.0), fragment_then_row, Candidate([block], 2.0),
                  Candidate([item("b.md", 2, 5, "y" * 150)], 1.0)]  # mostly shown already
    assert pack(candidates, k=2, budget_chars=8192, min_chars=80) == [row, block]
    assert pack(candidates, k=2, budget_chars=8192)[0] == heading  # without the floor: the heading leads
    assert pack(candidates, k=5, budget_chars=8192, min_chars=80) == [row, block]
    # nothing but fragments matched: they are better than no evidence at all
    assert pack([Candidate(iter([heading]), 1.0)], k=5, budget_chars=8192, min_chars=80) == [heading]


def test_packing_joins_items_that_overlap_or_touch() -> None:
    """With the source lines, an item overlapping or next to a packed item of its document
    joins it: each line shown once, one slot, a fragment kept when it extends packed lines."""
    from edaqa_pipeline.model import EvidenceItem
    from edaqa_pipeline.retrieval.line_structure import LineStructure
    from edaqa_pipeline.retrieval.packing import Candidate
    from edaqa_pipeline.retrieval.packing import pack_candidates as pack

    source = [f"line {n} " + "w" * 40 for n in range(1, 21)]
    lines = LineStructure.from_chunks([{"document": "a.md", "start_line": 1, "end_line": 20,
                                        "text": "\n".join(source), "line_kinds": ["text"] * 20}])

    def item(start: int, end: int, doc: str = "a.md") -> EvidenceItem:
        return EvidenceItem(chunk_id="", doc=doc, text="\n".join(source[start - 1:end]), score=1.0,
                            path="t", start_line=start, end_line=end)

    first, overlapping, touching, fragment = item(1, 6), item(5, 9), item(10, 12), item(13, 13)
    other = item(1, 3, "b.md")
    candidates = [Candidate([c], 1.0) for c in (first, overlapping, other, touching, fragment)]
    packed = pack(candidates, k=2, budget_chars=8192, min_chars=80, render=lines.render, join_gap=0)
    assert [(i.doc, i.start_line, i.end_line) for i in packed] == [("a.md", 1, 13), ("b.md", 1, 3)]
    assert packed[0].text == "\n".join(source[:13])  # every line once, as the source has it
    # without joining: the overlap is shown twice and the fragment is dropped
    apart = pack(candidates, k=5, budget_chars=8192, min_chars=80)
    assert [(i.start_line, i.end_line) for i in apart] == [(1, 6), (5, 9), (1, 3), (10, 12)]
    # a gap is filled from the source only up to join_gap lines
    gapped = [Candidate([item(1, 3)], 1.0), Candidate([item(6, 8)], 1.0)]
    assert len(pack(gapped, k=5, budget_chars=8192, render=lines.render, join_gap=1)) == 2
    assert [(i.start_line, i.end_line) for i in
            pack(gapped, k=5, budget_chars=8192, render=lines.render, join_gap=2)] == [(1, 8)]


def test_top_k_breaks_ties_by_row() -> None:
    import numpy as np

    assert top_k(np.array([0.1, 0.9, 0.9, 0.5]), 3) == [1, 2, 3]


@pytest.fixture(scope="module")
def snapshot(sample_index) -> IndexSnapshot:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    return IndexSnapshot.load(storage)


@pytest.mark.parametrize("method", CORE_METHODS)
def test_table_row_question(snapshot: IndexSnapshot, method: str) -> None:
    evidence = make_retriever(method, snapshot).retrieve(
        "What is the default value of the -starts_with option of define_power_grid?", 5)
    assert any(e.doc == "pdn.md" and "Default: `GROUND`" in e.text for e in evidence), [e.citation() for e in evidence]


@pytest.mark.parametrize("method", CORE_METHODS)
def test_code_question(snapshot: IndexSnapshot, method: str) -> None:
    evidence = make_retriever(method, snapshot).retrieve(
        "Show a Tcl script that builds a clock tree with sink clustering and a cluster size", 5)
    assert any(e.doc == "cts.md" and "build_clock_tree -root_buffer" in e.text for e in evidence)


def test_pdf_question_cites_a_page(snapshot: IndexSnapshot) -> None:
    evidence = make_retriever("bm25", snapshot).retrieve("quiescent current of the NX-LDO33 regulator", 5)
    pdf = [e for e in evidence if e.doc.endswith(".pdf")]
    assert pdf, [e.citation() for e in evidence]
    assert pdf[0].page == 1 and pdf[0].start_line is None
    assert pdf[0].citation() == "nimbus_ldo_datasheet.pdf:p1"


def test_evidence_carries_the_path_that_found_it(snapshot: IndexSnapshot) -> None:
    evidence = make_retriever("fa_hybrid", snapshot).retrieve("place_cells density", 5)
    assert {e.path for e in evidence} <= {"unit", "chunk", "unit+chunk"}
    assert all(e.start_line is not None or e.page is not None for e in evidence)


def test_citations_point_at_lines_that_contain_the_claims_terms(sample_index, snapshot: IndexSnapshot) -> None:  # type: ignore[no-untyped-def]
    """Every offline claim cites ``doc:Lx-Ly`` lines that really hold its numbers and names."""
    corpus, _, _ = sample_index
    questions = [
        "What is the default of -starts_with in define_power_grid?",
        "How do I enable sink clustering?",
        "What does CTS-0107 mean?",
        "What is the allowed range of -density for place_cells?",
    ]
    checked = 0
    for question in questions:
        answer = answer_question(question, make_retriever("edaqa", snapshot).retrieve(question, 5))
        assert answer.answerer == "extractive" and answer.claims, question
        for claim in answer.claims:
            assert claim.supported, (question, claim)
            cited = []
            for citation in claim.citations:
                match = re.fullmatch(r"([^:]+\.md):L(\d+)(?:-L(\d+))?", citation)
                if match is None:
                    continue  # a PDF page citation
                doc, start, end = match.groups()
                lines = (corpus / doc).read_text().split("\n")[int(start) - 1 : int(end or start)]
                cited.append("\n".join(lines))
            if cited:
                assert ungrounded_terms(claim.text, "\n".join(cited)) == [], (question, claim)
                checked += 1
            assert f"[{'; '.join(claim.citations)}]" in answer.text
    assert checked >= 4


def test_unit_path_finds_cross_document_evidence(tmp_path: Path) -> None:
    """A command documented in one manual and used in another: only the unit path links them."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "zork.md").write_text(
        "# Zork router\n\n## zork_route\n\nThe `zork_route` command routes nets with the zork engine.\n\n"
        "```tcl\nzork_route -layers list [-effort level]\n```\n\n#### Options\n\n"
        "| Switch Name | Description |\n| --- | --- |\n| `-layers` | Routing layers. |\n"
        "| `-effort` | Effort from 1 to 5. Default: `3`. |\n"
    )
    (corpus / "flows.md").write_text(
        "# Reference flows\n\n## Tapeout checklist for the quarterly shuttle\n\n"
        "Budget reviews, sign-off owners and the calendar of the shuttle are agreed first.\n\n"
        "```tcl\nzork_route -layers {M2 M3 M4} -effort 5\nsave_design top_routed\n```\n\n"
        "The meeting notes are stored with the shuttle calendar and reviewed weekly by the owners.\n"
    )
    (corpus / "misc.md").write_text(
        "# Misc\n\n## Licensing\n\nThe tool set is free software. Contributions are welcome.\n"
    )
    storage = tmp_path / "storage"
    report = index_corpus(corpus, storage, log=lambda *_: None)
    assert not report.failed
    snap = IndexSnapshot.load(storage)
    cross = snap.units.filter(snap.units["kind"] == "cross_document")
    assert cross["anchor"].to_list() == ["zork_route"]
    question = "Which effort levels does the zork_route command accept?"
    dense_docs = {e.doc for e in make_retriever("dense", snap).retrieve(question, 1)}
    cross_row = snap.units["kind"].to_list().index("cross_document")
    linked_docs = {snap.chunk_records[r]["document"] for r in snap.unit_chunk_rows[cross_row]}
    assert linked_docs == {"zork.md", "flows.md"}
    fa = FunctionAwareRetriever(snap, top_chunks=1)
    q = snap.base.encode([question])[0]
    found = fa.candidates(q, q)
    unit_only = [snap.chunk_records[r]["document"] for r, path in found.items() if path == "unit"]
    assert "flows.md" in unit_only and "flows.md" not in dense_docs
    evidence = FunctionAwareRetriever(snap, name="fa_hybrid", top_chunks=1).retrieve(question, 5)
    assert "flows.md" in {e.doc for e in evidence}


def test_index_writes_are_idempotent_and_deletions_reach_every_index(tmp_path: Path) -> None:
    from edaqa_pipeline_tests.fixtures_index import copy_corpus

    corpus = copy_corpus(tmp_path / "corpus", ["overview.md", "placement.md", "timing.md"])
    storage = tmp_path / "storage"
    index_corpus(corpus, storage, log=lambda *_: None)
    uri = str(storage / "lancedb")
    rows = lance_store.read_table(uri, lance_store.CHUNK_TABLE).num_rows
    units = lance_store.read_table(uri, lance_store.UNIT_TABLE).num_rows
    index_corpus(corpus, storage, force=True, log=lambda *_: None)  # re-run every partition
    assert lance_store.read_table(uri, lance_store.CHUNK_TABLE).num_rows == rows
    assert lance_store.read_table(uri, lance_store.UNIT_TABLE).num_rows == units

    (corpus / "timing.md").unlink()
    index_corpus(corpus, storage, log=lambda *_: None)
    chunks = lance_store.read_table(uri, lance_store.CHUNK_TABLE)
    assert "timing.md" not in set(chunks.column("document").to_pylist())
    unit_docs = lance_store.read_table(uri, lance_store.UNIT_TABLE).column("document").to_pylist()
    assert not any("timing.md" in d.split(",") for d in unit_docs)
    snap = IndexSnapshot.load(storage)
    assert "timing.md" not in set(snap.chunks["document"].to_list())
    for method in CORE_METHODS:
        evidence = make_retriever(method, snap).retrieve("report_slack digits", 10)
        assert all(e.doc != "timing.md" for e in evidence)


def test_ask_cli_json_contract(sample_index) -> None:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    out = subprocess.run(
        [sys.executable, "-m", "edaqa_pipeline.cli", "ask", "How do I enable sink clustering?",
         "--storage", str(storage), "--method", "hybrid_rrf", "--k", "3", "--json"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    payload = json.loads(out.stdout)
    assert {"question", "method", "answer", "answerer", "claims", "tokens", "retrieval_ms",
            "answer_ms", "evidence"} <= set(payload)
    assert payload["method"] == "hybrid_rrf" and len(payload["evidence"]) == 3
    assert payload["answerer"] == "extractive"
    assert {"doc", "start_line", "end_line", "page", "citation", "text", "score", "path",
            "evidence_id"} <= set(payload["evidence"][0])
    assert all(set(c) >= {"text", "citations", "supported"} for c in payload["claims"])
    assert "[cts.md:L" in payload["answer"]


def test_ask_on_empty_storage_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NotIndexedError, match="edaqa index"):
        IndexSnapshot.load(tmp_path)


def test_joining_measures_the_gap_between_shown_lines() -> None:
    """A bundle of separate runs (lines 1-2 and 19-20) does not join an item in its hole
    (lines 10-11) with gap 0: the hole was never shown, so joining would hide a long gap in
    one slot; an item next to a shown run joins it."""
    from edaqa_pipeline.model import EvidenceItem
    from edaqa_pipeline.retrieval.line_structure import LineStructure
    from edaqa_pipeline.retrieval.packing import item_lines, joined

    source = [f"line {n}" for n in range(1, 21)]
    lines = LineStructure.from_chunks([{"document": "a.md", "start_line": 1, "end_line": 20,
                                        "text": "\n".join(source), "line_kinds": ["text"] * 20}])

    def item(numbers: tuple[int, ...]) -> EvidenceItem:
        contiguous = numbers[-1] - numbers[0] + 1 == len(numbers)
        return EvidenceItem(chunk_id="", doc="a.md", text="\n".join(source[n - 1] for n in numbers),
                            score=1.0, path="t", start_line=numbers[0], end_line=numbers[-1],
                            line_numbers=() if contiguous else numbers)

    bundle = item((1, 2, 19, 20))
    assert ("a.md", 10) not in item_lines(bundle)  # the hole is not shown
    assert joined(bundle, item((10, 11)), lines.render, 0) is None
    near = joined(bundle, item((3, 4)), lines.render, 0)
    assert near is not None and near.line_numbers == (1, 2, 3, 4, 19, 20)
    assert near.text == "\n".join(source[n - 1] for n in (1, 2, 3, 4, 19, 20))


def test_an_options_row_belongs_to_the_command_its_section_documents(snapshot: IndexSnapshot) -> None:
    """The element graph's scope command reaches the evidence: a row of ``build_clock_tree``'s
    options table, shown without its heading or synopsis, verifies a claim that names the
    command, and not one that names another command."""
    from dataclasses import replace

    from edaqa_pipeline.generation.evidence import number_evidence
    from edaqa_pipeline.generation.verify import verify_claim
    from edaqa_pipeline.model import EvidenceItem

    row_line = next(n for n, line in enumerate((SAMPLE / "cts.md").read_text().split("\n"), 1)
                    if line.startswith("| `-cluster_size`"))
    lines = snapshot.line_structure
    assert lines.subjects("cts.md", [row_line]) == ("build_clock_tree",)
    chunk = next(r for r, rec in enumerate(snapshot.chunk_records)
                 if rec["document"] == "cts.md" and rec["start_line"] <= row_line <= rec["end_line"])
    item = snapshot.chunk_item(chunk, 1.0, "t")  # a chunk's item carries each line's command
    assert item.line_subjects[row_line - item.start_line] == "build_clock_tree"
    text = (SAMPLE / "cts.md").read_text().split("\n")[row_line - 1]
    row = EvidenceItem(chunk_id="", doc="cts.md", text=text, score=1.0, path="t", start_line=row_line,
                       end_line=row_line, line_kinds=("table_row",))
    claim = "The default cluster size of `build_clock_tree` is `20`."

    def verified(item: EvidenceItem, text: str = claim) -> bool:
        (numbered,) = number_evidence([item], packed=True)
        return verify_claim(text, [("E1", numbered.units())]).verified

    carried = replace(row, line_subjects=lines.subjects("cts.md", [row_line]))
    assert verified(carried)
    assert not verified(row)  # without it the row names no command
    assert not verified(carried, claim.replace("build_clock_tree", "global_route"))


def test_cutting_or_joining_an_item_keeps_each_lines_command() -> None:
    """``line_subjects`` stays one per shown line, aligned, when packing cuts or joins items."""
    from edaqa_pipeline.model import EvidenceItem
    from edaqa_pipeline.retrieval.line_structure import LineStructure
    from edaqa_pipeline.retrieval.packing import joined, truncated

    source = [f"| `-opt{n}` | option {n} |" for n in range(1, 7)]
    lines = LineStructure.from_chunks([{"document": "a.md", "start_line": 1, "end_line": 6,
                                        "text": "\n".join(source), "line_kinds": ["table_row"] * 6}])
    subjects = ("cmd_a", "cmd_a", "cmd_a", "cmd_b", "cmd_b", "cmd_b")

    def item(start: int, end: int) -> EvidenceItem:
        return EvidenceItem(chunk_id="", doc="a.md", text="\n".join(source[start - 1:end]), score=1.0, path="t",
                            start_line=start, end_line=end, line_subjects=subjects[start - 1:end])

    cut = truncated(item(1, 6), len("\n".join(source[:2])) + 3)
    assert cut.text.count("\n") + 1 == len(cut.line_subjects) == 3 and cut.line_subjects == subjects[:3]
    both = joined(item(3, 4), item(5, 6), lines.render, 0)
    assert both is not None and both.line_subjects == subjects[2:]
