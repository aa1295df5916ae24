"""Shared helpers of the evaluation tests (test_eval_*.py): a hand-made evidence item and an
answer judge on a scripted server."""

from __future__ import annotations

from edaqa_pipeline.evaluation.judge import AnswerJudge
from edaqa_pipeline.llm import OpenAICompatibleClient
from edaqa_pipeline.model import EvidenceItem


def ev(
    doc: str, text: str = "x", start: int | None = 1, end: int | None = 1, page: int | None = None
) -> EvidenceItem:
    if page is not None:
        start = end = None
    return EvidenceItem(
        chunk_id=f"{doc}:{start}:{page}:{text[:8]}",
        doc=doc,
        text=text,
        score=1.0,
        path="test",
        start_line=start,
        end_line=end,
        page=page,
    )


def _judge(server) -> AnswerJudge:
    return AnswerJudge(OpenAICompatibleClient(base_url=server.base_url, api_key=None,
                                              model="judge", max_retries=0, timeout_s=5))
