"""A streamed chat reply whose answer fails after the stream has begun still ends the way an
OpenAI client expects: an error event, then ``[DONE]`` (the status line is already sent, so
a 500 cannot be). The failure here is one the service does not describe (a ``RuntimeError``
from the answer's worker), the case a broken index or a bug produces."""

from __future__ import annotations

import asyncio
import json

from edaqa_pipeline.service.chat import chat_request
from edaqa_pipeline.service.http import chat_events


async def _events(failure: BaseException) -> list[str]:
    asked = chat_request({"model": "bm25", "stream": True,
                          "messages": [{"role": "user", "content": "What does -starts_with do?"}]})
    work: asyncio.Future[dict] = asyncio.get_running_loop().create_future()
    work.set_exception(failure)
    base = {"id": "chatcmpl-test", "created": 0, "model": "bm25", "system_fingerprint": "extractive"}
    return [e async for e in chat_events(base, asked, work, asyncio.Queue())]


def test_an_undescribed_failure_ends_the_stream_with_an_error_and_done() -> None:
    events = asyncio.run(_events(RuntimeError("lance table vanished")))
    assert events[-1] == "data: [DONE]\n\n"
    error = json.loads(events[-2].removeprefix("data: "))
    assert "RuntimeError" in error["error"]["message"], error
    assert "lance table vanished" not in events[-2]  # an internal message is not shown to a client
