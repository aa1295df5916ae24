"""The answer page of ``edaqa serve`` in Debian's headless Chromium (driven by Playwright, no
browser download), against a real ``edaqa serve`` subprocess on a copy of the indexed sample
corpus (so its votes file is this module's own): ask, follow a citation to its highlighted
lines or its marked PDF page, vote; the routes behind it over plain HTTP (bad requests, votes
sent at once, a PDF that changed or is gone). Servers are stopped by PID.

With ``EDAQA_SCREENSHOT_DIR`` set, the answer page's screenshot is also saved there (the
README's image comes from this test)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from edaqa_pipeline_tests.test_serve import serve

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
QUESTION = "What is the default value of the -starts_with option of define_power_grid?"
PDF_QUESTION = "What is the dropout voltage of the Nimbus LDO?"
PDF = "nimbus_ldo_datasheet.pdf"
UI_TIMEOUT_MS = 60_000
TOKEN = "page-test-token-5f1c"
SERVE_ARGS = ("--answers", "extractive", "--method", "bm25")


def copy_index(sample_index: Any, root: Path) -> tuple[Path, Path]:
    """(corpus, storage): the sample index copied under ``root``, its manifest pointing at a
    copy of the corpus, so votes and corpus changes stay this test's."""
    corpus, storage, _ = sample_index
    shutil.copytree(corpus, root / "corpus")
    shutil.copytree(storage, root / "storage")
    manifest = root / "storage" / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "corpus": str(root / "corpus")}))
    return root / "corpus", root / "storage"


@pytest.fixture(scope="module")
def page_server(sample_index, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    corpus, storage = copy_index(sample_index, tmp_path_factory.mktemp("answer_page"))
    with serve(storage, *SERVE_ARGS) as base:
        yield base, corpus, storage


def request(url: str, body: Any = None, *, raw: bytes | None = None, token: str | None = None,
            content_type: str = "application/json") -> tuple[int, dict[str, str], bytes]:
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": content_type} if data is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers),
                                    timeout=120) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def ask(base: str, question: str) -> dict[str, Any]:
    status, _, body = request(f"{base}/ask", {"question": question})
    assert status == 200, body
    return json.loads(body)


def votes_for(storage: Path, question: str) -> list[dict[str, Any]]:
    path = storage / "feedback" / "votes.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [v for v in map(json.loads, lines) if v["question"] == question]


@contextmanager
def chromium_page(expected_errors: str = "") -> Iterator[Any]:
    """A page in headless Chromium; on leaving, no console error (a script error, a CSP
    violation) but ones containing ``expected_errors`` may have been logged."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `make setup-dev` installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            page.set_default_timeout(UI_TIMEOUT_MS)
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            yield page
            assert [e for e in errors if not (expected_errors and expected_errors in e)] == []
        finally:
            browser.close()


def ask_on_page(page: Any, question: str) -> None:
    from playwright.sync_api import expect

    expect(page.locator("#method")).to_have_value("bm25")  # the server's default method
    page.fill("#question", question)
    page.click("#ask")
    expect(page.locator("#answer")).to_be_visible()


def test_the_page_answers_shows_the_cited_lines_and_records_a_vote(page_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    base, corpus, storage = page_server
    record = ask(base, QUESTION)
    claim = next(c for c in record["claims"] if "GROUND" in c["text"] and "-starts_with" in c["text"])
    citation = claim["citations"][0]
    document, _, span = citation.rpartition(":")
    start, _, end = span.removeprefix("L").partition("-L")
    start, end = int(start), int(end or start)
    source = (corpus / document).read_text().split("\n")

    with chromium_page() as page:
        page.goto(base)
        ask_on_page(page, QUESTION)
        expect(page.locator("#answer-text")).to_contain_text("GROUND")
        expect(page.locator(".notice")).to_have_count(0)
        mark = page.locator("#answer-text span.claim", has_text="-starts_with").filter(
            has_text="GROUND").first.locator("xpath=following-sibling::button[1]")
        expect(mark).to_have_text(citation)
        mark.click()

        cited = page.locator("#source-lines .line.cited")
        expect(cited.first).to_be_visible()
        numbers = [int(n) for n in cited.evaluate_all("rows => rows.map(r => r.dataset.line)")]
        assert numbers == list(range(start, end + 1))
        texts = cited.locator(".text").all_text_contents()
        assert texts == source[start - 1:end] and any("`GROUND`" in t for t in texts)
        shown = [int(n) for n in page.locator("#source-lines .line").evaluate_all(
            "rows => rows.map(r => r.dataset.line)")]
        assert shown == list(range(max(1, start - 5), min(len(source), end + 5) + 1))
        expect(page.locator("#source-title")).to_have_text(citation)

        before = len(votes_for(storage, record["question"]))
        page.click("#vote-up")
        expect(page.locator("#vote-status")).to_have_text("Vote recorded. Thank you.")
        expect(page.locator("#vote-up")).to_be_disabled()
        shots = [tmp_path / "answer_page.png"]
        if os.environ.get("EDAQA_SCREENSHOT_DIR"):
            Path(os.environ["EDAQA_SCREENSHOT_DIR"]).mkdir(parents=True, exist_ok=True)
            shots.append(Path(os.environ["EDAQA_SCREENSHOT_DIR"]) / "answer_page.png")
        for shot in shots:
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 20_000

    votes = votes_for(storage, record["question"])
    assert len(votes) == before + 1
    assert {k: v for k, v in votes[-1].items() if k != "time"} == {
        "question": record["question"], "method": "bm25", "answer": record["answer"],
        "citations": list(dict.fromkeys(c for cl in record["claims"] for c in cl["citations"])),
        "vote": "up"}


def _yellow_share(pixmap: Any, box: tuple[float, ...], step: int = 3) -> float:
    """The share of ``box``'s pixels (sampled) in the mark's amber over white paper."""
    x0, y0, x1, y1 = (int(v) for v in box)
    points = [(x, y) for x in range(x0 + 3, x1 - 3, step) for y in range(y0 + 3, y1 - 3, step)]
    colours = [pixmap.pixel(x, y) for x, y in points]
    return sum(r > 230 and g > 200 and b < 215 for r, g, b in colours) / len(points)


def test_a_pdf_citation_shows_its_page_with_the_claims_block_marked(page_server) -> None:  # type: ignore[no-untyped-def]
    import polars as pl
    import pymupdf
    from playwright.sync_api import expect

    base, _, storage = page_server
    record = ask(base, PDF_QUESTION)
    claim = next(c for c in record["claims"] if "180 mV" in c["text"])
    assert claim["citations"] == [f"{PDF}:p1"]
    item = next(e for e in record["evidence"] if e.get("id") == claim["evidence_ids"][0])

    query = urllib.parse.urlencode({"document": PDF, "page": 1, "chunk": item["chunk_id"],
                                    "claim": claim["text"]})
    status, headers, png = request(f"{base}/source/page?{query}")
    assert status == 200 and headers["content-type"] == "image/png"
    marks = json.loads(headers["x-edaqa-marks"])
    blocks = pl.read_parquet(storage / "tables" / "parsed_documents" / f"{PDF}.parquet")
    block = blocks.filter(pl.col("text").str.contains("dropout voltage is 180 mV")).row(0, named=True)
    x0, y0, x1, y1 = block["bbox"]
    assert len(marks) == 1  # the paragraph that holds the claim, not the whole chunk
    assert marks[0] == pytest.approx([(x0 - 2) * 2, (y0 - 2) * 2, (x1 + 2) * 2, (y1 + 2) * 2], abs=0.2)
    pixmap = pymupdf.Pixmap(png)
    assert (pixmap.width, pixmap.height) == (1190, 1684)  # A4 at 144 dpi
    assert _yellow_share(pixmap, marks[0]) > 0.5
    assert _yellow_share(pixmap, (0, 0, pixmap.width, marks[0][1])) < 0.01  # above it: unmarked

    with chromium_page() as page:
        page.goto(base)
        ask_on_page(page, PDF_QUESTION)
        page.locator("#answer-text button.cite", has_text=f"{PDF}:p1").first.click()
        image = page.locator("#source-image")
        expect(image).to_be_visible()
        expect(image).to_have_attribute("data-marks", "1")
        page.wait_for_function("() => document.getElementById('source-image').naturalWidth === 1190")
        expect(page.locator("#source-lines")).to_be_hidden()

        page.fill("#question", "What is the capital of France?")  # said plainly, nothing cited
        page.click("#ask")
        expect(page.locator("#answer-text .notice")).to_have_text(
            "Not in the documents: none of the retrieved passages answers this question.")
        expect(page.locator("#answer-text button.cite")).to_have_count(0)


def test_votes_sent_at_once_are_all_kept(page_server) -> None:  # type: ignore[no-untyped-def]
    base, _, storage = page_server
    marker = f"concurrent votes {uuid.uuid4().hex}"
    statuses: list[int] = []

    def voter(thread: int) -> None:
        for i in range(10):
            status, _, _ = request(f"{base}/vote", {
                "question": f"{marker} {thread}-{i}", "method": "bm25", "answer": "x" * 3000,
                "citations": ["pdn.md:L31"], "vote": "up" if i % 2 else "down"})
            statuses.append(status)

    threads = [threading.Thread(target=voter, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [201] * 80
    lines = (storage / "feedback" / "votes.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line whole
    ours = [r["question"] for r in records if r["question"].startswith(marker)]
    assert sorted(ours) == sorted(f"{marker} {t}-{i}" for t in range(8) for i in range(10))


BAD_GETS = [
    ("/source", 400),
    ("/source?document=pdn.md&start=1", 400),
    ("/source?document=nope.md&start=1&end=2", 404),
    ("/source?document=pdn.md&start=5&end=2", 400),
    ("/source?document=pdn.md&start=one&end=2", 400),
    ("/source?document=pdn.md&start=1&end=99999", 400),
    (f"/source?document={PDF}&start=1&end=2", 400),
    ("/source/page?document=pdn.md&page=1", 400),
    ("/source/page?document=nope.pdf&page=1", 404),
    (f"/source/page?document={PDF}", 400),
    (f"/source/page?document={PDF}&page=0", 400),
    (f"/source/page?document={PDF}&page=99", 400),
    (f"/source/page?document={PDF}&page=1&chunk=chk_0000", 404),
    (f"/source/page?document={PDF}&page=1&claim=" + "x" * 2001, 400),
]  # fmt: skip
GOOD_VOTE = {"question": "bad votes", "method": "bm25", "answer": "a", "citations": [], "vote": "up"}
BAD_VOTES = [
    ({**GOOD_VOTE, "vote": "sideways"}, 400),
    ({**GOOD_VOTE, "citations": ["not a citation"]}, 400),
    ({**GOOD_VOTE, "remote_addr": "10.0.0.1"}, 400),
    ({k: v for k, v in GOOD_VOTE.items() if k != "question"}, 400),
    ({**GOOD_VOTE, "method": "nope"}, 404),
]  # fmt: skip


def test_bad_requests_to_the_page_routes_get_4xx_with_a_message(page_server) -> None:  # type: ignore[no-untyped-def]
    base, _, storage = page_server
    for path, expected in BAD_GETS:
        status, _, body = request(base + path)
        assert status == expected, (path, body)
        assert set(json.loads(body)) == {"error"} and json.loads(body)["error"], path
    for vote, expected in BAD_VOTES:
        status, _, body = request(f"{base}/vote", vote)
        assert status == expected and json.loads(body)["error"], (vote, body)
    assert request(f"{base}/vote", raw=b"{not json")[0] == 400
    assert request(f"{base}/vote", raw=json.dumps(GOOD_VOTE).encode(), content_type="text/plain")[0] == 415
    assert votes_for(storage, "bad votes") == []
    status, headers, html = request(base + "/")
    assert status == 200 and b'{"auth_required": false}' in html
    assert "frame-ancestors 'none'" in headers["content-security-policy"]


def test_a_pdf_that_changed_or_is_gone_is_refused_not_mismarked(sample_index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import pymupdf

    from edaqa_pipeline.service import ServiceError
    from edaqa_pipeline.service.pdf_pages import render_page

    corpus, storage = copy_index(sample_index, tmp_path)
    claim = "The dropout voltage is 180 mV at the full load of 300 mA."
    assert len(render_page(storage, PDF, 1, claim=claim).boxes) == 1  # no chunk: the claim's block
    assert render_page(storage, PDF, 1).boxes == ()  # neither chunk nor claim: nothing marked

    other = pymupdf.open()
    other.new_page().insert_text((72, 200), "A different datasheet: nothing of the indexed text.")
    other.save(corpus / PDF)
    with pytest.raises(ServiceError, match="changed since it was indexed") as caught:
        render_page(storage, PDF, 1, claim=claim)
    assert caught.value.status == 409

    (corpus / PDF).unlink()
    with pytest.raises(ServiceError, match="no longer in the corpus folder") as caught:
        render_page(storage, PDF, 1, claim=claim)
    assert caught.value.status == 404


def test_a_server_with_a_token_asks_for_it_once_and_sends_it(sample_index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    _, storage = copy_index(sample_index, tmp_path)
    with serve(storage, *SERVE_ARGS, env={"EDAQA_API_TOKEN": TOKEN}) as base:
        assert request(f"{base}/source?document=pdn.md&start=31&end=31")[0] == 401
        assert request(f"{base}/source?document=pdn.md&start=31&end=31", token=TOKEN)[0] == 200
        with chromium_page(expected_errors="status of 401") as page:
            page.goto(base)
            expect(page.locator("#token-form")).to_be_visible()
            page.fill("#token", "wrong-token")
            page.click("#token-form button")
            page.fill("#question", QUESTION)
            page.click("#ask")
            expect(page.locator("#error")).to_contain_text("requires a valid API token")
            expect(page.locator("#token-form")).to_be_visible()  # asked again
            page.fill("#token", TOKEN)
            page.click("#token-form button")
            expect(page.locator("#token-form")).to_be_hidden()
            page.click("#ask")
            expect(page.locator("#answer-text")).to_contain_text("GROUND")
            page.locator("#answer-text button.cite").first.click()
            expect(page.locator("#source-lines .line.cited").first).to_be_visible()
            assert page.evaluate("sessionStorage.getItem('edaqa-api-token')") == TOKEN
