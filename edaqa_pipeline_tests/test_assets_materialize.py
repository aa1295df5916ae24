"""Per-document and cross-document assets materialised through Dagster on tiny corpora.

One module-scoped scenario indexes five documents on one ephemeral instance, each in its own
run like the sensor would launch them: two good manuals (one through the ``index_document``
job, one through ``materialize``), one whose blocks the structural check rejects (a problem
injected into ``structure.block_problems``; the blocking check must stop the downstream
assets), one with only an HTML comment and one with invalid UTF-8 (both refused by the parser:
their partition must fail with a message naming the file). Then ``assemble_corpus`` builds the
unit tables from what succeeded.
Every write goes to tmp (tables, LanceDB, LLM cache); the LLM resource is offline; embeddings
use the packaged MiniLM.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from dagster import AssetKey, DagsterInstance, Definitions, in_process_executor, materialize

from edaqa_pipeline.assets.partitions import DOCUMENTS
from edaqa_pipeline.definitions import build_definitions
from edaqa_pipeline.graphs.unit_schema import REJECTION_RULES, SCHEMAS
from edaqa_pipeline.jobs import CORPUS_ASSETS as JOB_CORPUS_ASSETS
from edaqa_pipeline.jobs import DOCUMENT_ASSETS as JOB_DOCUMENT_ASSETS
from edaqa_pipeline.model import ARTIFACTS_SCHEMA, BLOCKS_SCHEMA, CHUNKS_SCHEMA, OCCURRENCES_SCHEMA
from edaqa_pipeline.retrieval import lance_store
from edaqa_pipeline.retrieval.encoders import configured_encoder
from edaqa_pipeline.settings import Settings
from edaqa_pipeline_tests.dagster_fixtures import (
    CORRUPT_DOC,
    DOC_A,
    DOC_B,
    DOC_C,
    DOCUMENT_ASSETS,
    INJECTED_PROBLEM,
    NO_BLOCKS_DOC,
    UNIT_ASSETS,
    check_outcomes,
    failing_structure_check,
    make_settings,
    materialized_keys,
    offline_environment,
    step_failures,
    write_corpus,
)

DOCUMENT_SCHEMAS: dict[str, dict[str, Any]] = {
    "parsed_documents": BLOCKS_SCHEMA,
    "typed_artifacts": ARTIFACTS_SCHEMA,
    "chunks": CHUNKS_SCHEMA,
    "occurrences": OCCURRENCES_SCHEMA,
    "chunk_embeddings": {c: None for c in ("chunk_id", "document", "text_hash", "encoder_id", "vector")},
}
GOOD = ("a.md", "b.md")
REJECTED = "rejected.md"
NO_BLOCKS = "empty.md"
CORRUPT = "corrupt.md"
REFUSED = (NO_BLOCKS, CORRUPT)


@dataclass
class Indexed:
    cfg: Settings
    defs: Definitions
    instance: DagsterInstance
    runs: dict[str, Any] = field(default_factory=dict)
    assemble: Any = None

    def part(self, asset: str, key: str) -> Path:
        return self.cfg.tables_dir / asset / f"{key}.parquet"

    def table(self, asset: str) -> Path:
        return self.cfg.tables_dir / f"{asset}.parquet"

    def declared_checks(self, assets: tuple[str, ...]) -> set[str]:
        return {
            k.to_user_string()
            for k in self.defs.resolve_asset_graph().asset_check_keys
            if k.asset_key.to_user_string() in assets
        }


def _index_document(defs: Definitions, instance: DagsterInstance, key: str) -> Any:
    return defs.resolve_job_def("index_document").execute_in_process(
        partition_key=key, instance=instance, raise_on_error=False
    )


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("materialize")
    corpus = write_corpus(root / "corpus", {
        "a.md": DOC_A, "b.md": DOC_B, REJECTED: DOC_C, NO_BLOCKS: NO_BLOCKS_DOC,
        CORRUPT: CORRUPT_DOC,
    })  # fmt: skip
    cfg = make_settings(corpus, root / "storage")
    with offline_environment():
        defs = build_definitions(cfg, executor=in_process_executor)
        instance = DagsterInstance.ephemeral()
        instance.add_dynamic_partitions(DOCUMENTS, [*GOOD, REJECTED, *REFUSED])
        state = Indexed(cfg, defs, instance)
        # The job the sensor launches ...
        state.runs["a.md"] = _index_document(defs, instance, "a.md")
        # ... and the same assets through materialize(), with the definitions' resources.
        state.runs["b.md"] = materialize(
            assets=list(defs.assets or []),
            selection=list(JOB_DOCUMENT_ASSETS),
            partition_key="b.md",
            instance=instance,
            resources=dict(defs.resources or {}),
            raise_on_error=False,
        )
        with failing_structure_check(REJECTED):
            state.runs[REJECTED] = _index_document(defs, instance, REJECTED)
        for key in REFUSED:
            state.runs[key] = _index_document(defs, instance, key)
        state.assemble = defs.resolve_job_def("assemble_corpus").execute_in_process(
            instance=instance, raise_on_error=False
        )
        yield state
        instance.dispose()


# --- good documents --------------------------------------------------------------------------


@pytest.mark.parametrize("key", GOOD)
def test_good_document_run_succeeds_and_materialises_every_document_asset(indexed, key):
    result = indexed.runs[key]
    assert result.success, step_failures(result)
    assert materialized_keys(result) == set(JOB_DOCUMENT_ASSETS)


@pytest.mark.parametrize("key", GOOD)
@pytest.mark.parametrize("asset", DOCUMENT_ASSETS)
def test_parquet_partition_has_expected_columns(indexed, key, asset):
    path = indexed.part(asset, key)
    assert path.is_file(), path
    df = pl.read_parquet(path)
    assert df.columns == list(DOCUMENT_SCHEMAS[asset]), asset
    assert df.height > 0, asset
    assert df["document"].unique().to_list() == [key]


@pytest.mark.parametrize("key", GOOD)
def test_every_declared_check_ran_and_passed(indexed, key):
    outcomes = check_outcomes(indexed.runs[key])
    assert set(outcomes) == indexed.declared_checks(JOB_DOCUMENT_ASSETS)
    assert all(outcomes.values()), outcomes


@pytest.mark.parametrize("key", GOOD)
def test_row_count_metadata_matches_the_stored_table(indexed, key):
    result = indexed.runs[key]
    for event in result.all_events:
        if event.event_type_value != "ASSET_MATERIALIZATION":
            continue
        materialization = event.event_specific_data.materialization
        asset = materialization.asset_key.to_user_string()
        assert materialization.partition == key
        metadata = materialization.metadata
        assert "dagster/row_count" in metadata, asset
        stored = pl.read_parquet(indexed.part(asset, key)).height
        assert metadata["dagster/row_count"].value == stored, asset


def test_parsed_documents_metadata(indexed):
    (materialization,) = indexed.runs["a.md"].asset_materializations_for_node("parsed_documents")
    metadata = materialization.metadata
    assert metadata["document"].value == "a.md"
    assert metadata["format"].value == "markdown"
    assert metadata["n_lines"].value == DOC_A.count("\n")
    assert len(metadata["source_sha256"].value) == 64
    assert "preview" in metadata


def test_typed_artifacts_used_the_offline_llm(indexed):
    (materialization,) = indexed.runs["a.md"].asset_materializations_for_node("typed_artifacts")
    assert materialization.metadata["llm_provider"].value == "offline"


def test_chunk_embeddings_one_finite_vector_per_chunk(indexed):
    for key in GOOD:
        chunks = pl.read_parquet(indexed.part("chunks", key))
        vectors = pl.read_parquet(indexed.part("chunk_embeddings", key))
        assert vectors["chunk_id"].to_list() == chunks["chunk_id"].to_list()
        matrix = vectors["vector"].to_numpy()
        assert matrix.shape == (chunks.height, configured_encoder().dim)
        assert (abs(matrix).sum(axis=1) > 0).all()


def test_instance_knows_which_partitions_materialised(indexed):
    for asset in DOCUMENT_ASSETS:
        done = indexed.instance.get_materialized_partitions(AssetKey(asset))
        # parsed_documents of the rejected document is materialised (its metadata says why it
        # was left out) before its check fails; its table is not stored.
        expected = {*GOOD, REJECTED} if asset == "parsed_documents" else set(GOOD)
        assert done == expected, asset


# --- rejected blocks: the failed blocking check stops the downstream assets ------------------


def test_rejected_document_fails_its_blocking_structural_check(indexed):
    result = indexed.runs[REJECTED]
    assert result.success is False
    outcomes = check_outcomes(result)
    assert outcomes["parsed_documents:structurally_valid"] is False
    assert outcomes["parsed_documents:great_expectations_suite"] is True
    evaluation = next(
        e for e in result.get_asset_check_evaluations()
        if e.asset_check_key.to_user_string() == "parsed_documents:structurally_valid"
    )  # fmt: skip
    assert INJECTED_PROBLEM in evaluation.metadata["problems"].value
    failure = step_failures(result)["parsed_documents"]
    assert failure.error is not None and failure.error.cls_name == "DagsterAssetCheckFailedError"


def test_rejected_document_downstream_assets_not_materialised(indexed):
    result = indexed.runs[REJECTED]
    assert materialized_keys(result) == {"parsed_documents"}
    for asset in DOCUMENT_ASSETS:
        assert not indexed.part(asset, REJECTED).exists(), asset
    started = {e.step_key for e in result.all_events if e.event_type_value == "STEP_START"}
    assert started == {"parsed_documents"}


# --- refused documents: the partition fails with the file named; others are unaffected -------


@pytest.mark.parametrize(
    ("key", "reason"), [(CORRUPT, "UTF-8"), (NO_BLOCKS, "no Markdown content")]
)
def test_refused_document_fails_with_a_message_naming_the_file(indexed, key, reason):
    result = indexed.runs[key]
    assert result.success is False
    failures = step_failures(result)
    assert set(failures) == {"parsed_documents"}
    data = failures["parsed_documents"].user_failure_data
    assert data is not None
    assert key in data.description
    assert reason in data.description
    assert data.metadata["document"].value == key
    assert check_outcomes(result) == {}


@pytest.mark.parametrize("key", REFUSED)
def test_refused_document_leaves_nothing_stored(indexed, key):
    assert materialized_keys(indexed.runs[key]) == set()
    for asset in DOCUMENT_ASSETS:
        assert not indexed.part(asset, key).exists(), asset


def test_failed_documents_do_not_affect_other_runs(indexed):
    assert all(indexed.runs[key].success for key in GOOD)
    assert all(indexed.part("chunks", key).is_file() for key in GOOD)


# --- assemble_corpus -------------------------------------------------------------------------


def test_assemble_corpus_succeeds(indexed):
    assert indexed.assemble.success, step_failures(indexed.assemble)
    assert materialized_keys(indexed.assemble) == set(JOB_CORPUS_ASSETS)


@pytest.mark.parametrize("asset", UNIT_ASSETS)
def test_unit_tables_exist_with_expected_columns(indexed, asset):
    path = indexed.table(asset)
    assert path.is_file(), path
    assert pl.read_parquet(path).columns == list(SCHEMAS[asset])


def test_unit_checks_ran_and_passed(indexed):
    outcomes = check_outcomes(indexed.assemble)
    assert set(outcomes) == indexed.declared_checks(JOB_CORPUS_ASSETS)
    assert all(outcomes.values()), outcomes


def test_units_come_only_from_the_good_documents(indexed):
    edges = pl.read_parquet(indexed.table("unit_hyperedges"))
    assert edges.height > 0
    documents = set(edges["documents"].explode().to_list())
    assert documents <= set(GOOD)
    rejections = pl.read_parquet(indexed.table("unit_rejections"))
    assert set(rejections["rule"].to_list()) <= set(REJECTION_RULES)
    vectors = pl.read_parquet(indexed.table("unit_embeddings"))
    assert vectors["unit_id"].to_list() == edges["unit_id"].to_list()


def test_chunk_index_holds_exactly_the_good_documents(indexed):
    summary = pl.read_parquet(indexed.table("chunk_index"))
    assert summary["document"].to_list() == sorted(GOOD)
    expected = {k: pl.read_parquet(indexed.part("chunks", k)).height for k in GOOD}
    assert dict(summary.iter_rows()) == expected
    lance = lance_store.read_table(indexed.cfg.lancedb_uri, lance_store.CHUNK_TABLE)
    assert lance is not None
    assert lance.num_rows == sum(expected.values())
    assert set(lance.column("document").to_pylist()) == set(GOOD)


def test_nothing_written_outside_tmp_storage(indexed):
    assert indexed.cfg.tables_dir.is_relative_to(indexed.cfg.storage_root)
    assert Path(indexed.cfg.lancedb_uri).is_dir()
    assert Path(indexed.cfg.lancedb_uri).is_relative_to(indexed.cfg.storage_root)


# --- documents that go bad after a good version ----------------------------------------------


@pytest.fixture(scope="module")
def revised(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """x, y, z indexed; then y becomes corrupt and z's blocks are rejected; re-run; assemble."""
    root = tmp_path_factory.mktemp("revised")
    corpus = write_corpus(root / "corpus", {"x.md": DOC_A, "y.md": DOC_B, "z.md": DOC_C})
    cfg = make_settings(corpus, root / "storage")
    with offline_environment():
        defs = build_definitions(cfg, executor=in_process_executor)
        instance = DagsterInstance.ephemeral()
        instance.add_dynamic_partitions(DOCUMENTS, ["x.md", "y.md", "z.md"])
        state = Indexed(cfg, defs, instance)
        for key in ("x.md", "y.md", "z.md"):
            assert _index_document(defs, instance, key).success, key
        (corpus / "y.md").write_bytes(CORRUPT_DOC)
        (corpus / "z.md").write_text(DOC_C + "\nA new paragraph.\n", encoding="utf-8")
        state.runs["y.md"] = _index_document(defs, instance, "y.md")
        with failing_structure_check("z.md"):
            state.runs["z.md"] = _index_document(defs, instance, "z.md")
        state.assemble = defs.resolve_job_def("assemble_corpus").execute_in_process(
            instance=instance, raise_on_error=False
        )
        yield state
        instance.dispose()


def test_document_turned_corrupt_drops_its_previous_rows(revised):
    assert revised.runs["y.md"].success is False
    for asset in DOCUMENT_ASSETS:
        assert not revised.part(asset, "y.md").exists(), asset
    assert revised.assemble.success, step_failures(revised.assemble)
    summary = pl.read_parquet(revised.table("chunk_index"))
    assert "y.md" not in summary["document"].to_list()
    lance = lance_store.read_table(revised.cfg.lancedb_uri, lance_store.CHUNK_TABLE)
    assert lance is not None and "y.md" not in set(lance.column("document").to_pylist())


def test_document_failing_its_blocking_check_drops_its_previous_rows(revised):
    assert revised.runs["z.md"].success is False
    assert check_outcomes(revised.runs["z.md"])["parsed_documents:structurally_valid"] is False
    summary = pl.read_parquet(revised.table("chunk_index"))
    assert "z.md" not in summary["document"].to_list()
    edges = pl.read_parquet(revised.table("unit_hyperedges"))
    assert "z.md" not in set(edges["documents"].explode().to_list())


@pytest.mark.parametrize("documents", [["only.md"], []], ids=["one-document", "no-document"])
def test_tiny_corpus_assembles(tmp_path, documents):
    corpus = write_corpus(tmp_path / "corpus", dict.fromkeys(documents, DOC_C))
    cfg = make_settings(corpus, tmp_path / "storage")
    with offline_environment():
        defs = build_definitions(cfg, executor=in_process_executor)
        instance = DagsterInstance.ephemeral()
        if documents:
            instance.add_dynamic_partitions(DOCUMENTS, documents)
        for key in documents:
            assert _index_document(defs, instance, key).success
        result = defs.resolve_job_def("assemble_corpus").execute_in_process(
            instance=instance, raise_on_error=False
        )
        instance.dispose()
    assert result.success, {
        k: f.error and f.error.message for k, f in step_failures(result).items()
    }
    summary = pl.read_parquet(cfg.tables_dir / "chunk_index.parquet")
    assert summary["document"].to_list() == documents
