"""The search-and-answer service under every surface (CLI, HTTP server, MCP, answer page).

Each surface parses its own input and formats its own output; what it asks for, it asks here:
open a storage root (``EdaqaService.open``), list the built methods and the indexed documents,
retrieve, answer (the ``edaqa ask --json`` record), read the source lines a citation points
to, choose the answering model (``answer_client``) and the judge (``make_judge``), run an
evaluation (``prepare_evaluation``), record a reader's vote on an answer and export the
votes as a QA file (``record_vote``, ``export_votes``). Every problem a caller can fix is one
``ServiceError`` with a one-line message and an HTTP-shaped ``status``. The service never imports Dagster:
answering starts without loading the pipeline. The HTTP app is ``service.http``, imported on
its own so that the CLI does not load Starlette to answer one question.

Importing this package is cheap (the index, encoders and models load when a service opens),
because the CLI imports it to build its parser.
"""

from edaqa_pipeline.service.clients import ANSWERERS, answer_client, answerer_name, make_judge
from edaqa_pipeline.service.core import EdaqaService, load_snapshot
from edaqa_pipeline.service.errors import BAD_REQUEST, CONFLICT, NOT_FOUND, ServiceError
from edaqa_pipeline.service.evaluate import Evaluation, prepare_evaluation
from edaqa_pipeline.service.requests import MAX_K
from edaqa_pipeline.service.sources import MAX_LINES, SourceLines
from edaqa_pipeline.service.votes import export_votes, record_vote

__all__ = [
    "ANSWERERS",
    "BAD_REQUEST",
    "CONFLICT",
    "MAX_K",
    "MAX_LINES",
    "NOT_FOUND",
    "EdaqaService",
    "Evaluation",
    "ServiceError",
    "SourceLines",
    "answer_client",
    "answerer_name",
    "export_votes",
    "load_snapshot",
    "make_judge",
    "prepare_evaluation",
    "record_vote",
]
