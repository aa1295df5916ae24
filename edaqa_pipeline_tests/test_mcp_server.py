"""``edaqa mcp`` asked by the MCP SDK's own client, over stdio (the SDK launches and stops the
server) and over streamable HTTP (a subprocess on a free loopback port, stopped by PID), on
the sample corpus indexed through Dagster."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from edaqa_pipeline_tests.llm_servers import _default_signals, free_port, stop_process, wait_ready

pytestmark = pytest.mark.slow

QUESTION = "What is the default value of the -starts_with option of define_power_grid?"
CITATION = re.compile(r"\[[\w./-]+\.md:L\d+(-L\d+)?")
TOOLS = {"search", "ask", "read_lines", "list_documents", "list_methods"}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EDAQA_LLM", "OPENAI"))}
    return {**env, "HF_HUB_OFFLINE": "1"}


def _command(storage: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "edaqa_pipeline.cli", "mcp", "--storage", str(storage),
            "--answers", "extractive", *extra]


async def _session(server: Any) -> dict[str, Any]:
    """What one client session sees: the tools, an answer, a search, the cited lines, and
    the error results of bad arguments (after which the server still answers)."""
    from mcp import Client

    seen: dict[str, Any] = {}
    async with Client(server, read_timeout_seconds=300) as client:
        seen["tools"] = {t.name: t for t in (await client.list_tools()).tools}
        seen["ask"] = await client.call_tool("ask", {"question": QUESTION})
        seen["search"] = await client.call_tool("search", {"question": QUESTION, "k": 3, "method": "bm25"})
        seen["documents"] = await client.call_tool("list_documents", {})
        seen["methods"] = await client.call_tool("list_methods", {})
        claim = seen["ask"].structured_content["claims"][0]
        document, lines = claim["citations"][0].split(":")
        start, _, end = lines.replace("L", "").partition("-")
        seen["lines"] = await client.call_tool("read_lines", {"document": document, "start": int(start),
                                                              "end": int(end or start)})
        seen["claim"] = claim
        seen["bad"] = [await client.call_tool(name, args) for name, args in (
            ("read_lines", {"document": "no_such.md", "start": 1, "end": 2}),
            ("read_lines", {"document": document, "start": 5, "end": 1}),
            ("ask", {"question": "   "}),
            ("ask", {"question": QUESTION, "method": "no_such_method"}),
            ("search", {"question": QUESTION, "k": 0}),
            ("search", {"question": QUESTION, "k": "many"}),
            ("search", {"question": QUESTION, "k": True}),  # JSON true is no count
            ("search", {"question": QUESTION, "k": 3.0}),
            ("read_lines", {"document": document, "start": True, "end": "3"}),
        )]
        seen["after"] = await client.call_tool("search", {"question": QUESTION, "k": 1})
    return seen


def _check(seen: dict[str, Any]) -> None:
    assert set(seen["tools"]) >= TOOLS
    for name in TOOLS:  # a model reads these to choose and call the tool
        assert len(seen["tools"][name].description or "") > 40, name
    assert "question" in seen["tools"]["ask"].input_schema["properties"]

    ask = seen["ask"]
    assert not ask.is_error
    record = ask.structured_content
    assert record["answerer"] == "extractive" and not record["not_in_documents"]
    assert "GROUND" in record["claims"][0]["text"], record["claims"][0]
    assert CITATION.search(record["answer"]), record["answer"]
    assert all(c["citations"] for c in record["claims"])

    search = seen["search"].structured_content
    assert search["method"] == "bm25" and 1 <= len(search["evidence"]) <= 3
    assert all(e["citation"] and e["text"] for e in search["evidence"])

    assert "pdn.md" in seen["documents"].structured_content["documents"]
    methods = seen["methods"].structured_content
    assert methods["default"] == "edaqa" and "bm25" in methods["methods"]

    # the lines the first claim cites hold what it states
    lines = seen["lines"].structured_content
    assert "GROUND" in "\n".join(lines["lines"]), lines
    assert lines["citation"] == seen["claim"]["citations"][0]

    messages = [r.content[0].text for r in seen["bad"]]
    assert all(r.is_error for r in seen["bad"]), messages
    assert "no_such.md" in messages[0] and "not an indexed document" in messages[0]
    assert "no_such_method" in messages[3]
    assert not seen["after"].is_error and seen["after"].structured_content["evidence"]


def test_mcp_client_over_stdio(sample_index) -> None:  # type: ignore[no-untyped-def]
    from mcp.client.stdio import StdioServerParameters

    _, storage, _ = sample_index
    command = _command(storage)
    params = StdioServerParameters(command=command[0], args=command[1:], env=_env())
    _check(asyncio.run(_session(params)))


@contextmanager
def _http_server(storage: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """``edaqa mcp --transport http`` on a free loopback port; yields its MCP endpoint URL."""
    port = free_port()
    log = storage.parent / f"mcp-{port}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(_command(storage, "--transport", "http", "--port", str(port)),
                                stdout=out, stderr=subprocess.STDOUT, env={**_env(), **(env or {})},
                                preexec_fn=_default_signals)
        url = f"http://127.0.0.1:{port}/mcp"
        try:  # a bare GET is not an MCP request: any HTTP answer means it listens
            wait_ready(proc, url, 180, log, what="edaqa mcp", any_status=True)
            yield url
        finally:
            stop_process(proc)
            assert proc.poll() is not None


def test_mcp_client_over_streamable_http(sample_index) -> None:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    with _http_server(storage) as url:
        _check(asyncio.run(_session(url)))
        # a page on another site that resolves its name to 127.0.0.1 (DNS rebinding), or posts
        # from its own origin, is refused before the request is read
        for header, value, status in (("Host", "attacker.example", 421),
                                      ("Origin", "http://attacker.example", 403)):
            forged = urllib.request.Request(url, data=b"{}", method="POST", headers={
                header: value, "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream"})
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(forged, timeout=10)
            assert refused.value.code == status, (header, refused.value.code)
        # and the server still answers
        seen = asyncio.run(_list_tools(url))
        assert seen >= TOOLS


async def _list_tools(url: str) -> set[str]:
    from mcp import Client

    async with Client(url, read_timeout_seconds=60) as client:
        return {t.name for t in (await client.list_tools()).tools}


def test_mcp_http_refuses_a_non_loopback_bind_without_a_token(tmp_path: Path) -> None:
    done = subprocess.run(_command(tmp_path, "--transport", "http", "--host", "0.0.0.0"),
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 2
    assert "EDAQA_API_TOKEN" in done.stderr and "0.0.0.0" in done.stderr


def test_mcp_http_with_a_token_refuses_requests_without_it(sample_index) -> None:  # type: ignore[no-untyped-def]
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    _, storage, _ = sample_index
    with _http_server(storage, {"EDAQA_API_TOKEN": "s3cret-token"}) as url:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            request = urllib.request.Request(url, data=b"{}", method="POST", headers={
                **headers, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            assert refused.value.code == 401
        oversized = urllib.request.Request(url, data=b"{" + b" " * 300_000 + b"}", method="POST", headers={
            "Authorization": "Bearer s3cret-token", "Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(oversized, timeout=10)
        assert refused.value.code == 413

        async def tools() -> set[str]:
            from mcp import Client

            client = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret-token"}, timeout=60)
            async with Client(streamable_http_client(url, http_client=client), read_timeout_seconds=60) as mcp:
                return {t.name for t in (await mcp.list_tools()).tools}

        assert asyncio.run(tools()) >= TOOLS
