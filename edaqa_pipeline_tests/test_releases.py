"""Several releases of the same manuals in one storage root (``corpus.releases``).

Two releases of a small corpus are indexed through Dagster (the newer one first, so their
order must come from their dates): ``cts.md`` changes the default and range of
``-cluster_size`` (20 -> 30, 4-64 -> 4-128), ``placement.md`` is the same file in both. The
tests hold what a user relies on: a question is answered from the release it names, else the
newest; no method returns another release's lines; adding a release builds only its
documents; removing one leaves the tables a build without it would have; an evaluation
scores the evidence's release; and mixing named and unnamed corpora is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from edaqa_pipeline.cli import main
from edaqa_pipeline.cli.index import index_corpus
from edaqa_pipeline.cli.releases import register_release
from edaqa_pipeline.corpus.releases import Release, ReleaseError, Releases, check_date
from edaqa_pipeline.generation.followup import Turn
from edaqa_pipeline.service import EdaqaService, ServiceError, prepare_evaluation
from edaqa_pipeline.settings import DEFAULT_CORPUS
from edaqa_pipeline_tests.test_serve import _post, serve

pytestmark = pytest.mark.slow

DOCS = ("cts.md", "placement.md")
OLD_ROW = "Allowed values are integers from 4 to 64. Default: `20`."
NEW_ROW = "Allowed values are integers from 4 to 128. Default: `30`."


def _release_corpus(dest: Path, changed: bool) -> Path:
    dest.mkdir(parents=True)
    for name in DOCS:
        shutil.copy(DEFAULT_CORPUS / name, dest / name)
    if changed:
        text = (dest / "cts.md").read_text()
        assert OLD_ROW in text
        (dest / "cts.md").write_text(text.replace(OLD_ROW, NEW_ROW))
    return dest


def _add(corpus: Path, storage: Path, name: str, date: str):  # type: ignore[no-untyped-def]
    register_release(corpus, storage, name, date)
    return index_corpus(corpus, storage, log=lambda *_: None)


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("releases")
    paths: dict[str, Any] = {"old": _release_corpus(root / "r2024", changed=False),
             "new": _release_corpus(root / "r2026", changed=True), "storage": root / "storage"}
    first = _add(paths["new"], paths["storage"], "or26", "2026-08-22")
    second = _add(paths["old"], paths["storage"], "or24", "2024-03-01")
    assert not first.failed and not second.failed
    paths["second_built"] = second.reindexed
    return paths


def test_releases_are_ordered_by_date_and_adding_one_builds_only_its_documents(
        releases: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["releases", "--storage", str(releases["storage"]), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["releases"]
    assert [(r["name"], r["date"], r["documents"], r["newest"]) for r in listed] == [
        ("or24", "2024-03-01", 2, False), ("or26", "2026-08-22", 2, True)]
    assert releases["second_built"] == ["or24/cts.md", "or24/placement.md"]


def test_a_question_is_answered_from_the_release_it_names_else_the_newest(releases: dict[str, Any]) -> None:
    svc = EdaqaService.open(releases["storage"])
    newest = svc.answer("What is the default of -cluster_size?", "edaqa", 5)
    assert (newest["release"], newest["release_from"]) == ("or26", "newest")
    assert newest["evidence"] and all(e["doc"].startswith("or26/") and e["release"] == "or26"
                                      for e in newest["evidence"])
    assert "30" in newest["claims"][0]["text"] and newest["claims"][0]["citations"][0].startswith("or26/cts.md:")
    old = svc.answer("What was the default of -cluster_size in the 2024 docs?", "edaqa", 5)
    assert (old["release"], old["release_from"]) == ("or24", "named in the question")
    follow_up = svc.answer("and which values does it allow?", "edaqa", 5, earlier=(
        Turn("user", "What was the default of -cluster_size in the 2024 docs?"),
        Turn("assistant", old["answer"])))
    assert follow_up["release"] == "or24" and "64" in follow_up["answer"]
    assert all(e["doc"].startswith("or24/") for e in old["evidence"])
    assert "20" in old["claims"][0]["text"] and old["claims"][0]["citations"][0].startswith("or24/cts.md:")
    pinned = svc.answer("What was the default of -cluster_size in the 2024 docs?", "edaqa", 5, release="or26")
    assert pinned["release_from"] == "asked" and all(e["doc"].startswith("or26/") for e in pinned["evidence"])


def test_no_method_sees_another_releases_lines(releases: dict[str, Any]) -> None:
    """Each method's retriever on a release's view (before the service's filter) ranks that
    release's lines only, and keeps its usual depth."""
    svc = EdaqaService.open(releases["storage"])
    assert {"bm25", "dense", "hybrid_rrf", "edaqa"} <= set(svc.methods)
    view = svc.release_snapshot("or24")
    assert view.documents == ["or24/cts.md", "or24/placement.md"]
    assert view.chunks.height + svc.release_snapshot("or26").chunks.height == svc.snapshot.chunks.height
    assert all(view.chunks["document"][r].startswith("or24/") for members in view.unit_chunk_rows for r in members)
    for method in svc.methods:
        for release in ("or24", "or26"):
            result = svc.retriever(method, None, release).retrieve(
                "How do I build a clock tree with sink clustering?", 10)
            assert len(result.items) >= 3, (method, release)
            assert {item.doc.split("/")[0] for item in result.items} == {release}, method


def test_an_unknown_release_is_refused_with_the_known_ones(
        releases: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    svc = EdaqaService.open(releases["storage"])
    with pytest.raises(ServiceError, match=r"'or25' is not a release .*or24, or26") as caught:
        svc.answer("What is the default of -cluster_size?", "edaqa", 5, release="or25")
    assert caught.value.status == 404
    assert main(["ask", "x?", "--storage", str(releases["storage"]), "--release", "or25"]) == 2
    assert "is not a release" in capsys.readouterr().err


def test_an_evaluation_scores_the_release_of_its_evidence(releases: dict[str, Any], tmp_path: Path) -> None:
    qa = tmp_path / "versions.jsonl"
    qa.write_text("\n".join(json.dumps(q) for q in [
        {"id": "old", "question": "What was the default of -cluster_size in the 2024 docs?",
         "answer": "20", "release": "or24", "category": "pinned",
         "evidence": [{"doc": "cts.md", "release": "or24", "start_line": 42, "end_line": 42}]},
        {"id": "new", "question": "What is the default of -cluster_size?", "answer": "30",
         "release": "or26", "category": "newest",
         "evidence": [{"doc": "cts.md", "start_line": 42, "end_line": 42}]},  # the item's release
    ]) + "\n")
    evaluation = prepare_evaluation(releases["storage"], qa, methods=["bm25", "edaqa"], judge="none",
                                    element_metrics=False)
    metrics, rows = evaluation.run(progress=False)
    for method in ("bm25", "edaqa"):
        assert metrics["methods"][method]["wrong_release@2048t"] == 0.0
        assert metrics["methods"][method]["span_hit@2048t"] == 1.0
    assert all(e["release"] == row["evidence"][0]["doc"].split("/")[0] for row in rows for e in row["evidence"])
    pinned = prepare_evaluation(releases["storage"], qa, methods=["bm25"], judge="none",
                                element_metrics=False, release="or24")
    metrics, _ = pinned.run(progress=False)
    assert metrics["by_category"]["newest"]["bm25"]["wrong_release@2048t"] == 1.0


def _edaqa(*argv: str) -> subprocess.CompletedProcess[str]:
    """The installed ``edaqa`` command (a command that indexes runs Dagster in its own process)."""
    return subprocess.run([str(Path(sys.executable).parent / "edaqa"), *argv], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_removing_a_release_leaves_what_a_build_without_it_has(tmp_path: Path) -> None:
    old = _release_corpus(tmp_path / "r2024", changed=False)
    new = _release_corpus(tmp_path / "r2026", changed=True)
    both, alone, reverse = tmp_path / "both", tmp_path / "alone", tmp_path / "reversed"
    _add(old, both, "or24", "2024-03-01")
    _add(new, both, "or26", "2026-08-22")
    _add(new, reverse, "or26", "2026-08-22")
    _add(old, reverse, "or24", "2024-03-01")
    orders = [json.loads((s / "manifest.json").read_text())["tables"] for s in (both, reverse)]
    assert {k: v["content_hash"] for k, v in orders[0].items()} == \
        {k: v["content_hash"] for k, v in orders[1].items()}  # the order releases arrive in
    removed = _edaqa("releases", "--storage", str(both), "--remove", "or24")
    assert removed.returncode == 0, removed.stderr
    assert "removed release or24 (2 documents)" in removed.stdout
    _add(new, alone, "or26", "2026-08-22")
    manifests = [json.loads((s / "manifest.json").read_text()) for s in (both, alone)]
    assert manifests[0]["documents"] == manifests[1]["documents"] == ["or26/cts.md", "or26/placement.md"]
    assert {k: v["content_hash"] for k, v in manifests[0]["tables"].items()} == \
        {k: v["content_hash"] for k, v in manifests[1]["tables"].items()}
    last = _edaqa("releases", "--storage", str(both), "--remove", "or26")
    assert last.returncode == 2 and "only release" in last.stderr
    empty = tmp_path / "r2025"
    empty.mkdir()
    (empty / "logo.png").write_bytes(b"not a manual")
    failed = _edaqa("index", "--corpus", str(empty), "--storage", str(both), "--release", "or25",
                    "--release-date", "2025-01-01", "--quiet")
    assert failed.returncode == 1 and "'or25' has no indexed document" in failed.stderr, failed.stderr
    assert Releases.load(both).names == ["or26"]  # not left as the newest release, empty


def test_named_and_unnamed_corpora_never_mix(releases: dict[str, Any],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    storage = str(releases["storage"])
    assert main(["index", "--corpus", str(releases["old"]), "--storage", storage, "--quiet"]) == 2
    assert "holds releases (or24, or26): name the release" in capsys.readouterr().err
    assert main(["index", "--corpus", str(releases["old"]), "--storage", storage, "--release", "or25",
                 "--quiet"]) == 2
    assert "release 'or25' is new: give its date" in capsys.readouterr().err
    assert main(["index", "--corpus", str(releases["old"]), "--storage", storage, "--release", "or25",
                 "--release-date", "2025-13-01", "--quiet"]) == 2
    assert "give it as YYYY-MM-DD" in capsys.readouterr().err
    assert main(["index", "--corpus", str(releases["old"]), "--storage", storage, "--release", "or25",
                 "--release-date", "2025-01-01", "--quiet"]) == 2
    assert "is already release 'or24'" in capsys.readouterr().err
    assert Releases.load(releases["storage"]).names == ["or24", "or26"]  # nothing was registered


def test_a_storage_indexed_without_a_release_takes_none(releases: dict[str, Any], tmp_path: Path) -> None:
    unnamed = tmp_path / "unnamed"
    index_corpus(releases["old"], unnamed, log=lambda *_: None)
    with pytest.raises(ReleaseError, match="indexed without --release"):
        register_release(releases["new"], unnamed, "or26", "2026-08-22")
    assert not Releases.load(unnamed)


def _two(tmp: Path) -> Releases:
    return Releases((Release("openroad-2024", "2024-03-01", tmp), Release("openroad", "2026-08-22", tmp)))


@pytest.mark.parametrize(("question", "release"), [
    ("What was the default of -max_split_size in the 2024 docs?", "openroad-2024"),
    ("As of March 2024, which options does cluster_flops take?", "openroad-2024"),
    ("what did the 2024-03 manual say about pdn?", "openroad-2024"),
    ("As of 2025, is -sink_clustering_levels supported?", "openroad-2024"),  # newest before its end
    ("In the 2026 manual, what is the default?", "openroad"),
    ("What does openroad-2024 say about detailed_placement?", "openroad-2024"),
    ("In the 2024 docs, how do I run openroad with -exit?", "openroad-2024"),  # a date beats a word
    ("What did the 2024 psm docs say about -vsrc?", "openroad-2024"),
    ("How do I run openroad in batch mode?", None),  # a release named like the tool is the tool
    ("Set the seed to 2025 for place_pins", None),  # a number, not said to be a date
    ("How many cells may 2025 designs use?", None),  # "may", the verb
    ("What about the 2024-13 manual?", None),  # no month 13
    ("What is the default of -sink_clustering_size?", None),  # names none: the caller takes the newest
    ("What changed in CTS between 2024 and 2026?", None),  # names two
    ("Why does set_wire_rc -w 2048 fail?", None),  # an option value, not a year
    ("Is the limit 2024um or 2030 nm?", None),  # lengths, not years
    ("What did the 2019 docs say?", None),  # before every release
])
def test_a_question_is_routed_to_the_release_it_names(tmp_path: Path, question: str, release: str | None) -> None:
    assert _two(tmp_path).route(question) == release


def test_release_names_dates_and_keys_are_checked(tmp_path: Path) -> None:
    releases = _two(tmp_path)
    assert releases.newest == "openroad" and releases.release_of("openroad-2024/cts.md") == "openroad-2024"
    assert releases.release_of("cts.md") is None and releases.release_of("other/cts.md") is None
    with pytest.raises(ReleaseError, match="YYYY-MM-DD"):
        check_date("2024-03")
    with pytest.raises(ValueError, match=r"'\.\.'"):
        releases.path_of("openroad/../../etc/passwd")
    (tmp_path / "releases.json").write_text("{not json")
    with pytest.raises(ReleaseError, match=r"releases\.json: not a release registry"):
        Releases.load(tmp_path)


def test_the_http_api_answers_from_the_release_a_request_names(releases: dict[str, Any]) -> None:
    question = "What is the default of -cluster_size?"
    with serve(releases["storage"], "--answers", "extractive") as base:
        with urllib.request.urlopen(f"{base}/releases", timeout=60) as resp:
            listed = json.loads(resp.read())
        assert listed["newest"] == "or26" and [r["name"] for r in listed["releases"]] == ["or24", "or26"]
        status, record = _post(f"{base}/ask", json.dumps({"question": question, "release": "or24"}).encode())
        assert status == 200 and record["release"] == "or24" and record["release_from"] == "asked"
        assert all(e["release"] == "or24" for e in record["evidence"]) and "20" in record["claims"][0]["text"]
        status, body = _post(f"{base}/ask", json.dumps({"question": question, "release": "or25"}).encode())
        assert status == 404 and "or24, or26" in body["error"]
        chat = {"model": "edaqa", "messages": [{"role": "user", "content": question}], "release": "or24"}
        status, reply = _post(f"{base}/v1/chat/completions", json.dumps(chat).encode())
        assert status == 200 and "or24/cts.md" in reply["choices"][0]["message"]["content"]
        status, _ = _post(f"{base}/v1/chat/completions", json.dumps({**chat, "release": 7}).encode())
        assert status == 400
        status, record = _post(f"{base}/ask", json.dumps({"question": question}).encode())
        assert status == 200 and record["release"] == "or26"  # still serving, the newest by default


def test_a_release_takes_the_vectors_of_texts_an_earlier_release_encoded(releases: dict[str, Any]) -> None:
    """The second release's unchanged texts (all of placement.md, all but one row's chunk of
    cts.md) are not encoded again; that their bytes equal a fresh encoding is held by the
    removal test (a release built after another equals one built alone)."""
    from dagster import AssetKey

    from edaqa_pipeline.cli.index import instance_for

    event = instance_for(releases["storage"]).get_latest_materialization_event(AssetKey("chunk_embeddings"))
    assert event is not None and event.asset_materialization is not None
    metadata = {k: v.value for k, v in event.asset_materialization.metadata.items()}
    assert str(event.asset_materialization.partition).startswith("or24/")  # the second release's build
    assert metadata["batch_shared_vectors"] > metadata["batch_encoded"] >= 1, metadata


def test_changes_between_releases_cite_both_sides_and_invent_none(
        releases: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    storage = str(releases["storage"])
    assert main(["changes", "--storage", storage, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["from"]["name"], report["to"]["name"]) == ("or24", "or26")
    assert [(c["option"], c["kind"]) for c in report["changes"]] == [("-cluster_size", "default_changed")]
    change = report["changes"][0]
    assert (change["old"]["value"], change["new"]["value"]) == ("20", "30")
    assert (change["old"]["citation"], change["new"]["citation"]) == ("or24/cts.md:L42", "or26/cts.md:L42")
    assert OLD_ROW in change["old"]["text"] and NEW_ROW in change["new"]["text"]
    assert main(["changes", "--storage", storage, "--tool", "placement"]) == 0  # unchanged manual
    assert ": 0 changes (none)" in capsys.readouterr().out
    assert main(["changes", "--storage", storage, "--from", "or26", "--to", "or24"]) == 2
    assert "is not older than" in capsys.readouterr().err
    assert main(["changes", "--storage", storage, "--to", "or25"]) == 2
    assert "no release 'or25'" in capsys.readouterr().err


def test_a_change_question_is_answered_from_both_releases_and_a_control_gets_no_change(
        releases: dict[str, Any]) -> None:
    svc = EdaqaService.open(releases["storage"])
    record = svc.answer("What changed for -cluster_size between 2024 and 2026?", "edaqa", 5)
    assert record["release_from"] == "changes from or24"
    assert [(c["option"], c["kind"]) for c in record["changes"]] == [("-cluster_size", "default_changed")]
    first, second = record["claims"][:2]
    assert "was `20`" in first["text"] and first["citations"] == ["or24/cts.md:L42"]
    assert "is `30`" in second["text"] and second["citations"] == ["or26/cts.md:L42"]
    assert {e["release"] for e in record["evidence"]} == {"or24", "or26"}
    control = svc.answer("What changed for -max_fanout between 2024 and 2026?", "edaqa", 5)
    assert control["changes"] == [] and control["release_from"] == "no change since or24"
    assert all(e["release"] == "or26" for e in control["evidence"])
    assert not any(" was " in c["text"] for c in control["claims"])
    plain = svc.answer("How do I change the maximum fanout of a clock buffer?", "edaqa", 5)
    assert "changes" not in plain and plain["release_from"] == "newest"


@pytest.mark.parametrize(("question", "pair"), [
    ("What changed in CTS since the 2024 release?", ("openroad-2024", "openroad")),
    ("What changed in clock_tree_synthesis between 2024 and 2026?", ("openroad-2024", "openroad")),
    ("Is -insertion_delay still supported in the 2026 docs?", ("openroad-2024", "openroad")),
    ("Is -insertion_delay still supported?", ("openroad-2024", "openroad")),
    ("Which options were added to global_route in the 2026 manual?", ("openroad-2024", "openroad")),
    ("How do I change the clock period?", None),
    ("How do I change -sink_clustering_size in the 2024 docs?", None),
    ("What was the default of -max_split_size in the 2024 docs?", None),
    ("What is the difference between global_placement and detailed_placement?", None),
    ("How does set_wire_rc differ from estimate_parasitics?", None),
    ("How do I change from the default router to CUGR?", None),
    ("In the 2024 docs, how many buffers are added by repair_design?", None),
    ("Which options were removed from global_route in the 2026 manual?", ("openroad-2024", "openroad")),
    ("Has -wire_unit changed since the 2024 docs?", ("openroad-2024", "openroad")),
    ("What is new in the 2026 docs for cts?", ("openroad-2024", "openroad")),
])
def test_a_question_about_a_change_names_the_two_releases(tmp_path: Path, question: str,
                                                          pair: tuple[str, str] | None) -> None:
    assert _two(tmp_path).change_pair(question) == pair


def test_a_vector_taken_by_text_is_checked_against_a_fresh_encoding() -> None:
    """The check behind sharing vectors across releases: a vector taken for an identical text
    must be the bytes a fresh encoding gives, and a wrong one is named."""
    import numpy as np
    import polars as pl

    from edaqa_pipeline.retrieval.embedder import Embedder, text_hash, vector_series
    from edaqa_pipeline.retrieval.encoders import base_encoder

    encoder = base_encoder("")
    text = "Specifies the maximum number of sinks per cluster."
    right = encoder.encode([text], stable=True)
    for stored, problems in ((right, 0), (np.roll(right, 1, axis=1), 1)):
        earlier = pl.DataFrame({"item_id": ["or24/chunk"], "text_hash": [text_hash(text)],
                                "encoder_id": [encoder.encoder_id]}).with_columns(
            vector_series("vector", stored, encoder.dim))
        embedder = Embedder.from_frames(encoder, earlier, kind="chunk")
        embedder.embed("chunk", ["or26/chunk"], [text])
        assert embedder.shared == 1 and embedder.encoded == 0
        assert len(embedder.recheck_shared()) == problems
