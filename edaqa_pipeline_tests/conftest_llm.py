"""Pytest fixtures for the LLM layer: a real SmolLM2 server and scripted fault servers.

The SmolLM2 server is session-scoped (it loads in about a second but is shared anyway). When
llama-cpp-python is missing the LLM tests are skipped with a hint to run ``make setup-dev`` --
except in CI (``CI=true``), where a missing server is a setup bug and fails the test instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from edaqa_pipeline_tests.llm_servers import (
    Reply,
    ScriptedServer,
    http_error,
    llama_server,
    missing_local_llm,
)


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


@pytest.fixture(scope="session")
def smollm2_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the session's SmolLM2 server writes its log (per-request token counts)."""
    return tmp_path_factory.mktemp("llama") / "server.log"


@pytest.fixture(scope="session")
def smollm2_base_url(smollm2_log: Path) -> Iterator[str]:
    """Base URL (``http://127.0.0.1:PORT/v1``) of llama.cpp serving SmolLM2 as ``smollm2``."""
    reason = missing_local_llm()
    if reason is not None:
        if _in_ci():
            pytest.fail(f"CI=true but {reason}", pytrace=False)
        pytest.skip(reason)
    with llama_server(log_path=smollm2_log) as base_url:
        yield base_url


@pytest.fixture
def scripted_server() -> Iterator[Callable[..., ScriptedServer]]:
    """Factory: ``scripted_server([reply, ...], default=...)`` -> a started server."""
    servers: list[ScriptedServer] = []

    def start(script: Sequence[Reply], default: Reply | None = None) -> ScriptedServer:
        server = ScriptedServer(list(script), default=default or http_error(500)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
