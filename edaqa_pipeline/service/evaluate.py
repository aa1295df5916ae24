"""``edaqa eval`` as a service call: methods run on a QA file, scored and written out.

The evaluation needs the same opened index, retrievers and answerer as answering, plus its own
wiring (the QA loader, the judge, TechDocRAG's element metrics as extra per-question scores,
the model's progress line); assembling it here keeps the CLI to argument parsing and printing,
and lets any other caller run the same evaluation with the same outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from edaqa_pipeline.service.clients import (
    answer_client,
    answer_settings,
    answerer_name,
    make_judge,
)
from edaqa_pipeline.service.core import EdaqaService
from edaqa_pipeline.service.errors import ServiceError


@dataclass
class Evaluation:
    """A prepared evaluation: QA items, built and warmed retrievers, answerer and judge."""

    service: EdaqaService
    items: list[Any]  # evaluation.qa.QAItem
    retrievers: dict[str, Any]
    llm: Any  # the answering LLM client, None = extractive
    judge: Any  # evaluation.judge.AnswerJudge, None = offline rules
    k: int
    element_metrics: bool = True
    settings: Any = None  # generation.answer_settings.AnswerSettings; None: the defaults

    @property
    def answerer(self) -> str:
        return answerer_name(self.llm)

    @property
    def judge_name(self) -> str:
        return self.judge.name if self.judge is not None else "offline rules"

    def run(self, *, progress: bool = True) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(metrics.json dict, result rows) of every method on every question."""
        from edaqa_pipeline.evaluation.runner import run_evaluation
        from edaqa_pipeline.generation.answer_settings import AnswerSettings, evidence_answerer

        snapshot = self.service.snapshot
        answer = evidence_answerer(self.llm, self.settings or AnswerSettings())
        metrics, rows = run_evaluation(
            self.items, self.retrievers, answer, k=self.k,
            embed=partial(snapshot.base.encode, stable=True), judge=self.judge,
            progress=progress, extra_scores=self._extra_scores(), status=self._status())
        metrics["answerer"] = self.answerer
        if self.judge is not None:
            metrics["judge"] = self.judge.name
        return metrics, rows

    def write(self, out: str | Path, metrics: dict[str, Any], rows: list[dict[str, Any]], *,
              reproduced: str) -> dict[str, Path]:
        """metrics.json, results.jsonl, report.md and report.html under ``out``."""
        from edaqa_pipeline.evaluation.runner import write_outputs

        return write_outputs(Path(out), metrics, rows, reproduced=reproduced)


    def _extra_scores(self) -> Callable[..., dict[str, float]] | None:
        """TechDocRAG's element-graph metrics (rehr@10_L0..L4, ecr, poa, csr) per question."""
        if not self.element_metrics:
            return None
        from edaqa_pipeline.evaluation.element_metrics import load_view

        view = load_view(self.service.storage, self.service.documents)

        def extra(item: Any, evidence: list[Any], answer: str) -> dict[str, float]:
            return view.scores(evidence, gold_spans=item.gold_spans, ref_passages=item.ref_passages,
                               gold_docs=item.gold_docs, answer=answer)

        return extra

    def _status(self) -> Callable[[int, int], str] | None:
        """The model's measured tokens/s and the time left, for the progress bar."""
        llm = self.llm
        if llm is None or not hasattr(llm, "throughput"):
            return None
        from edaqa_pipeline.llm import BatchProgress

        def status(done: int, total: int) -> str:
            batch = BatchProgress("answers", total, llm.throughput)
            batch.advance(done)
            return batch.line()

        return status


def prepare_evaluation(storage: str | Path, qa: str | Path, *, qa_format: str = "auto",
                       source_map: str | None = None, methods: list[str] | None = None,
                       answers: str | None = None, judge: str = "auto", k: int = 10,
                       element_metrics: bool = True, release: str | None = None) -> Evaluation:
    """Load the QA file, choose answerer and judge, open the index and build (and warm) the
    retrievers of ``methods`` (default: every method built in ``storage``); every user-facing
    problem is one ``ServiceError``."""
    from edaqa_pipeline.evaluation.qa import QAFormatError, load_qa

    try:
        items = load_qa(qa, qa_format, source_map)
    except QAFormatError as exc:
        raise ServiceError(str(exc), param="qa") from None
    llm = answer_client(answers)
    settings = answer_settings()  # a bad setting is named before any question is asked
    chosen_judge = make_judge(judge)
    service = EdaqaService.open(storage)
    retrievers = service.routed(methods or service.methods, llm, release)
    service.warm(answerer=llm)
    return Evaluation(service, items, retrievers, llm, chosen_judge, k, element_metrics, settings)
