"""The OpenAI-compatible chat request: the conversation, its options, and the reply's content.

``POST /v1/chat/completions`` is how chat front ends and OpenAI clients ask. What such a
client sends is read here, once, into what the service needs:

* the conversation: the last user message is the question; the user and assistant turns
  before it let a follow-up ("and what is its default?") be made standalone before
  retrieval (``generation/followup.py``). System messages are not passed on: the answer is
  written under the grounded-answer instructions, which a system message must not switch
  off (the record lists them under ``ignored``);
* ``temperature`` (0-2) goes to the model that writes the answer (extractive answers are
  deterministic and ignore it); ``max_tokens`` (or ``max_completion_tokens``) caps the
  model's answer budget, and the reply shows the whole verified claims that fit in it
  (``finish_reason`` ``length`` when one was left out): a claim is never cut in half, since
  half a claim is no longer the verified claim;
* ``stream``: the reply is sent claim by claim as each claim passes verification (``http.py``),
  with the citations inline in the text and structured on the final chunk.

A value the API does not accept (a temperature of 5, a max_tokens of "a lot", an ``n`` other
than 1) is a 400 that names it, not a silent default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.generation.answer_claims import AnswerClaim
from edaqa_pipeline.generation.followup import Turn
from edaqa_pipeline.service.errors import ServiceError
from edaqa_pipeline.text.counting import approx_tokens

MAX_MESSAGES = 100  # turns of one chat request
MAX_TEMPERATURE = 2.0  # OpenAI's range


@dataclass(frozen=True)
class ChatRequest:
    """What one chat completion asks: the question, the turns before it, and the options."""

    question: str
    earlier: tuple[Turn, ...]
    ignored: tuple[str, ...]
    temperature: float
    max_tokens: int | None
    stream: bool
    release: str | None = None


def _text(content: Any) -> str | None:
    """The text of a message's content: a string, or a list of parts whose text parts count."""
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if not all(isinstance(p, str) for p in parts):
            raise ServiceError("a text part of a message has no string 'text'", param="messages")
        return " ".join(parts)
    return content if isinstance(content, str) else None


def conversation_of(messages: Any) -> tuple[str, tuple[Turn, ...], tuple[str, ...]]:
    """(the last user message's text, the user and assistant turns before it, what was ignored)."""
    if not isinstance(messages, list) or not messages:
        raise ServiceError("'messages' must be a non-empty list", param="messages")
    if len(messages) > MAX_MESSAGES:
        raise ServiceError(f"'messages' has {len(messages)} messages; at most {MAX_MESSAGES}",
                           param="messages")
    turns: list[Turn] = []
    ignored: list[str] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ServiceError(f"messages[{i}] is not an object", param="messages")
        role, text = message.get("role"), _text(message.get("content"))
        if role in ("user", "assistant") and text and text.strip():
            turns.append(Turn(str(role), text.strip()))
        elif role in ("system", "developer"):
            ignored.append(f"{role} message")
    last_user = max((i for i, t in enumerate(turns) if t.role == "user"), default=None)
    if last_user is None:
        raise ServiceError("no user message with text content in 'messages'", param="messages")
    return turns[last_user].text, tuple(turns[:last_user]), tuple(dict.fromkeys(ignored))


def chat_request(body: dict[str, Any]) -> ChatRequest:
    """The checked ``ChatRequest`` of a request body (400 naming what is wrong)."""
    question, earlier, ignored = conversation_of(body.get("messages"))
    temperature = body.get("temperature", 0.0)
    if temperature is None:
        temperature = 0.0
    if (not isinstance(temperature, int | float) or isinstance(temperature, bool)
            or not 0.0 <= temperature <= MAX_TEMPERATURE):
        raise ServiceError(f"'temperature' must be a number from 0 to {MAX_TEMPERATURE:g}",
                           param="temperature")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool)
                                   or max_tokens < 1):
        raise ServiceError("'max_tokens' must be a positive integer", param="max_tokens")
    if body.get("n", 1) not in (1, None):
        raise ServiceError("'n' must be 1: one answer per question", param="n")
    stream = body.get("stream", False)
    if not isinstance(stream, bool | None):
        raise ServiceError("'stream' must be true or false", param="stream")
    release = body.get("release")  # an EDAQA field: the release the question is about
    if release is not None and not isinstance(release, str):
        raise ServiceError("'release' must be a release name (see GET /releases)", param="release")
    return ChatRequest(question, earlier, ignored, float(temperature), max_tokens, bool(stream), release)


def claim_of(record_claim: dict[str, Any]) -> AnswerClaim:
    """The ``AnswerClaim`` of a record's claim (to render it as the answer does)."""
    return AnswerClaim(record_claim["text"], tuple(record_claim["evidence_ids"]),
                       tuple(record_claim["citations"]), float(record_claim["support"]),
                       bool(record_claim.get("recited", False)), bool(record_claim.get("quoted", False)))


class ClaimBudget:
    """The whole claims that fit in ``max_tokens`` (None: all), counted as they are sent."""

    def __init__(self, max_tokens: int | None) -> None:
        self.max_tokens = max_tokens
        self.used = 0
        self.cut = False

    def take(self, text: str) -> bool:
        """Whether ``text`` (the next claim, rendered) fits; once one does not, none does."""
        cost = approx_tokens(text)
        if self.cut or (self.max_tokens is not None and self.used + cost > self.max_tokens):
            self.cut = True
            return False
        self.used += cost
        return True


def sources_text(record: dict[str, Any], shown: Sequence[AnswerClaim]) -> str:
    """The "Sources:" list of the evidence the ``shown`` claims cite ("" when none)."""
    cited = {i for c in shown for i in c.evidence_ids}
    lines = [f"- {e.get('location') or e['citation']} ({e['id']})"
             for e in record["evidence"] if e.get("id") in cited]
    return "\n".join(["", "", "Sources:", *lines]) if lines else ""


def structured_citations(record: dict[str, Any], shown: Sequence[AnswerClaim]) -> list[dict[str, Any]]:
    """Each shown claim with its citations and the evidence items (document, lines or page)
    they point to: what a client shows beside the answer without parsing the text."""
    evidence = {e["id"]: e for e in record["evidence"] if "id" in e}
    return [{"claim": c.text, "citations": list(c.citations), "evidence": [
        {key: evidence[i][key] for key in ("id", "citation", "location", "doc", "start_line", "end_line", "page")
         if key in evidence[i]} for i in c.evidence_ids if i in evidence]} for c in shown]


def reply_content(record: dict[str, Any], max_tokens: int | None) -> tuple[str, list[AnswerClaim], bool]:
    """(the assistant message, the claims it shows, whether ``max_tokens`` cut claims)."""
    if record["not_in_documents"]:
        return record["answer"], [], False
    budget = ClaimBudget(max_tokens)
    shown = [c for c in map(claim_of, record["claims"]) if budget.take(c.rendered())]
    lead = record.get("lead", "")
    text = " ".join([lead, *(c.rendered() for c in shown)] if lead else [c.rendered() for c in shown])
    return text + sources_text(record, shown), shown, budget.cut
