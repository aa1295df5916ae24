"""The ``eval_reports`` asset: every retrieval method on the same questions, one report.

Re-materialises when the indexes change (automation condition on ``chunk_index`` and
``unit_embeddings``). Config names the QA files (our ``edaqa`` format or ORD-QA with its source
map) and the methods; each QA file gets ``STORAGE/eval/<name>/`` with ``metrics.json``,
``results.jsonl``, ``report.md`` and ``report.html``. The asset's value is the metrics as a
long table; its metadata carries the Markdown table and the plot.

Answers: ``answers`` = ``llm`` (the ``llm`` resource's model writes grounded answers with
verified citations), ``extractive`` (offline quotes), or ``""``: ``llm`` when the resource has
a real model. With ``judge`` the answers are also judged by the ``EDAQA_JUDGE_*`` model
(LLM-Score, Atomic-ROUGE, citation support) when one is configured.
"""

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    Config,
    MetadataValue,
    Output,
    asset,
)
from pydantic import Field

from edaqa_pipeline.assets.units import CORPUS_CONDITION
from edaqa_pipeline.registry import method_tables
from edaqa_pipeline.resources import LLMResource, PipelineSettings
from edaqa_pipeline.settings import REPO_ROOT


class EvalReportConfig(Config):
    qa_files: list[str] = Field(default_factory=lambda: ["data/sample_qa.jsonl"])
    source_map: str = ""
    methods: list[str] = Field(default_factory=list, description="methods to compare; empty = "
                               "every method whose indexes are built (retrievers.available_methods)")
    k: int = 10
    answers: str = Field(default="", description="llm | extractive | '' (llm when the llm "
                         "resource has a real model)")
    judge: bool = Field(default=True, description="judge answers with the EDAQA_JUDGE_* (else "
                        "EDAQA_LLM_*) model when one is configured")


@asset(
    # every table some registered method reads, from the registry (never a hand-kept list)
    deps=["chunk_index", "unit_embeddings", *method_tables()],
    group_name="evaluation",
    kinds={"python", "polars", "html"},
    automation_condition=CORPUS_CONDITION,
    pool="llm",  # answers and judge calls share the instance's bound on LLM requests
    check_specs=[AssetCheckSpec("every_method_scored_every_file", asset="eval_reports", blocking=True,
                                description="each configured method has metrics for each QA file")],
    description="Evaluation report comparing every retrieval method on the configured QA files.",
)
def eval_reports(context: AssetExecutionContext, config: EvalReportConfig, settings: PipelineSettings,
                 llm: LLMResource) -> Iterator:
    from dagster import Failure

    from edaqa_pipeline.evaluation.judge import AnswerJudge
    from edaqa_pipeline.evaluation.qa import load_qa
    from edaqa_pipeline.evaluation.report import plot_method_bars, render_markdown
    from edaqa_pipeline.evaluation.runner import run_evaluation, write_outputs
    from edaqa_pipeline.generation.answer_settings import (
        AnswerSettingError,
        AnswerSettings,
        evidence_answerer,
    )
    from edaqa_pipeline.llm import judge_from_env, llm_configured
    from edaqa_pipeline.registry import available_methods, make_retriever
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

    cfg = settings.settings()
    client = llm.get_client()
    choice = config.answers or ("llm" if client.provider != "offline" else "extractive")
    if choice not in ("llm", "extractive"):
        raise Failure(f"eval_reports: answers must be llm, extractive or '', got {config.answers!r}")
    if choice == "llm" and client.provider == "offline":
        raise Failure("eval_reports: answers=llm but the llm resource has no model "
                      "(set EDAQA_LLM_BASE_URL and EDAQA_LLM_MODEL)")
    answer_llm = client if choice == "llm" else None
    try:
        answer = evidence_answerer(answer_llm, AnswerSettings.from_env())
    except AnswerSettingError as exc:
        raise Failure(f"eval_reports: {exc}") from None
    judge = AnswerJudge(judge_from_env()) if config.judge and llm_configured() else None
    snapshot = IndexSnapshot.load(cfg.storage_root, cfg.lancedb_uri)
    methods = config.methods or available_methods(cfg.storage_root)
    retrievers = {m: make_retriever(m, snapshot, llm=answer_llm) for m in methods}

    rows = []
    markdown = []
    plot = None
    for qa in config.qa_files:
        path = Path(qa) if Path(qa).is_absolute() else REPO_ROOT / qa
        items = load_qa(path, "auto", (REPO_ROOT / config.source_map) if config.source_map else None)
        metrics, results = run_evaluation(items, retrievers, answer, k=config.k,
                                          embed=partial(snapshot.base.encode, stable=True), judge=judge, progress=False)
        metrics["answerer"] = f"llm:{client.model}" if answer_llm is not None else "extractive"
        out = cfg.storage_root / "eval" / path.stem
        written = write_outputs(out, metrics, results, reproduced=f"eval_reports asset, {qa}")
        markdown.append(f"### {path.name} ({metrics['n_questions']} questions)\n\n" + render_markdown(metrics))
        for method, values in metrics["methods"].items():
            rows.extend({"qa_file": path.name, "method": method, "metric": m, "value": float(v)}
                        for m, v in sorted(values.items()))
        context.log.info(f"wrote {written['report_html']}")
        if plot is None:
            plot = plot_method_bars(metrics["methods"])
    metadata = {"report": MetadataValue.md("\n\n".join(markdown)), "dagster/row_count": len(rows),
                "report_dir": str(cfg.storage_root / "eval"),
                "answerer": f"llm:{client.model}" if answer_llm is not None else "extractive",
                "judge": judge.name if judge is not None else "offline rules",
                **client.stats.as_metadata()}
    if plot is not None:
        metadata["plot"] = MetadataValue.md(f"![retrieval by method](data:image/png;base64,{plot})")
    frame = pl.DataFrame(rows, schema={"qa_file": pl.String(), "method": pl.String(), "metric": pl.String(),
                                       "value": pl.Float64()})
    yield Output(frame, metadata=metadata)
    expected = {(Path(q).name, m) for q in config.qa_files for m in methods}
    present = set(frame.select("qa_file", "method").unique().iter_rows())
    missing = sorted(expected - present)
    yield AssetCheckResult(check_name="every_method_scored_every_file", passed=not missing,
                           severity=AssetCheckSeverity.ERROR,
                           metadata={"missing": ", ".join(f"{f}:{m}" for f, m in missing) or "none"})
