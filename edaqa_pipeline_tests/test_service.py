"""The service under every surface, on a real index of the sample corpus (the session's
``sample_index``): what it lists, that its answer is the ``edaqa ask --json`` record, the
source lines behind a citation, the request checks every surface shares, and retrieval from
several threads at once."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from edaqa_pipeline import service
from edaqa_pipeline.cli import main as cli_main
from edaqa_pipeline.service import EdaqaService, ServiceError
from edaqa_pipeline_tests.fixtures_index import SAMPLE

QUESTION = "How do I enable sink clustering in CTS?"
TIMINGS = ("retrieval_ms", "answer_ms")


@pytest.fixture(scope="module")
def svc(sample_index) -> EdaqaService:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    return EdaqaService.open(storage)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers are the extractive ones whatever the environment configures."""
    monkeypatch.setenv("EDAQA_LLM_PROVIDER", "offline")


def test_open_lists_methods_and_documents(svc: EdaqaService, sample_index) -> None:  # type: ignore[no-untyped-def]
    from edaqa_pipeline.registry import available_methods

    _, storage, _ = sample_index
    assert {"edaqa", "bm25", "dense", "hybrid_rrf", "fa_hybrid"} <= set(svc.methods)
    assert svc.methods == available_methods(Path(storage))
    assert {"cts.md", "pdn.md"} <= set(svc.documents)
    assert svc.storage == Path(storage).resolve()


def test_opening_a_root_without_index_is_one_service_error(tmp_path: Path) -> None:
    with pytest.raises(ServiceError, match="edaqa index") as caught:
        EdaqaService.open(tmp_path)
    assert caught.value.status == 404 and "\n" not in str(caught.value)


def test_answer_is_the_ask_json_record(svc: EdaqaService, sample_index,  # type: ignore[no-untyped-def]
                                       capsys: pytest.CaptureFixture[str]) -> None:
    _, storage, _ = sample_index
    for method, k in (("bm25", 3), ("edaqa", 5)):
        record = svc.answer(QUESTION, method, k, service.answer_client("extractive"))
        capsys.readouterr()
        assert cli_main(["ask", QUESTION, "--storage", str(storage), "--method", method,
                         "--k", str(k), "--answers", "extractive", "--json"]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert list(record) == list(printed)  # the same keys, in the same order
        assert {k: v for k, v in record.items() if k not in TIMINGS} == \
            {k: v for k, v in printed.items() if k not in TIMINGS}
        assert all(isinstance(record[t], float) for t in TIMINGS)
        assert record["method"] == method and len(record["evidence"]) == k
        assert "[cts.md:L" in record["answer"]


def test_retrieve_returns_the_methods_retrieval(svc: EdaqaService) -> None:
    result = svc.retrieve(QUESTION, "bm25", 4)
    assert result.method == "bm25" and len(result) == 4
    assert result.items[0].doc == "cts.md"
    assert svc.retriever("bm25") is svc.retriever("bm25")  # built once, reused


def test_read_lines_are_the_indexed_source_lines(svc: EdaqaService) -> None:
    source = (SAMPLE / "cts.md").read_text().split("\n")
    read = svc.read_lines("cts.md", 20, 40)
    assert read.lines == tuple(source[19:40])
    assert read.citation == "cts.md:L20-L40" and read.text == "\n".join(source[19:40])
    assert read.to_json()["lines"] == source[19:40]
    whole = svc.read_lines("cts.md", 1, read.n_lines)
    assert whole.lines == tuple(source[: read.n_lines])
    assert all(line == "" for line in source[read.n_lines:])  # only blank lines after the last
    assert svc.read_lines("cts.md", 7, 7).lines == (source[6],)


@pytest.mark.parametrize(("document", "start", "end", "status", "message"), [
    ("nope.md", 1, 2, 404, "not an indexed document"),
    ("../cts.md", 1, 2, 404, "not an indexed document"),
    ("cts.md", 0, 2, 400, "out of range"),
    ("cts.md", 5, 4, 400, "out of range"),
    ("cts.md", 1, 10_000, 400, "out of range"),
    ("cts.md", "1", 2, 400, "integer line number"),
    ("nimbus_ldo_datasheet.pdf", 1, 2, 400, "pages, not lines"),
])
def test_read_lines_refuses_clearly(svc: EdaqaService, document: str, start: object, end: object,
                                    status: int, message: str) -> None:
    with pytest.raises(ServiceError, match=message) as caught:
        svc.read_lines(document, start, end)
    assert caught.value.status == status


def test_read_lines_is_bounded(svc: EdaqaService, monkeypatch: pytest.MonkeyPatch) -> None:
    from edaqa_pipeline.service import sources

    monkeypatch.setattr(sources, "MAX_LINES", 10)
    assert len(svc.read_lines("cts.md", 1, 10).lines) == 10
    with pytest.raises(ServiceError, match="at most 10") as caught:
        svc.read_lines("cts.md", 1, 11)
    assert caught.value.status == 400


@pytest.mark.parametrize(("question", "method", "k", "status", "param"), [
    ("", "bm25", 3, 400, "question"),
    ("   ", "bm25", 3, 400, "question"),
    (None, "bm25", 3, 400, "question"),
    (QUESTION, "nope", 3, 404, "model"),
    (QUESTION, None, 3, 404, "model"),
    (QUESTION, "chipmind", 3, 404, "model"),  # registered, not built on the core index
    (QUESTION, "bm25", 0, 400, "k"),
    (QUESTION, "bm25", service.MAX_K + 1, 400, "k"),
    (QUESTION, "bm25", "3", 400, "k"),
    (QUESTION, "bm25", True, 400, "k"),
])
def test_bad_requests_are_service_errors(svc: EdaqaService, question: object, method: object,
                                         k: object, status: int, param: str) -> None:
    for call in (svc.retrieve, svc.answer):
        with pytest.raises(ServiceError) as caught:
            call(question, method, k)
        assert (caught.value.status, caught.value.param) == (status, param)
        assert "\n" not in str(caught.value)


def test_an_unbuilt_method_says_how_to_build_it(svc: EdaqaService) -> None:
    with pytest.raises(ServiceError, match="--with chipkg") as caught:
        svc.retriever("chipmind")
    assert caught.value.code == "model_not_found"


def test_choices_of_answerer_and_judge() -> None:
    assert service.answer_client("extractive") is None
    assert service.answerer_name(None) == "extractive"
    assert service.make_judge("none") is None


def test_concurrent_retrieval_equals_serial(sample_index) -> None:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    fresh = EdaqaService.open(storage)  # nothing built yet: the threads race to build
    questions = [QUESTION, "What is the default of -starts_with in define_pdn_grid?",
                 "Which command reports the worst slack?", "How is global routing congestion reduced?"]
    calls = [(q, m) for m in ("bm25", "dense", "edaqa") for q in questions] * 3

    def run(call: tuple[str, str]) -> list[dict]:
        return [e.to_json() for e in fresh.retrieve(call[0], call[1], 5)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(pool.map(run, calls))
    serial = [run(call) for call in calls]
    assert concurrent == serial
    with ThreadPoolExecutor(max_workers=8) as pool:
        built = set(pool.map(lambda _: id(fresh.retriever("hybrid_rrf")), range(16)))
    assert len(built) == 1
