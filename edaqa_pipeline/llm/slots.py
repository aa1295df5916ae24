"""Request slots: never more requests in flight to one server than it can serve at once.

A single-slot server (llama.cpp's default, Ollama's ``OLLAMA_NUM_PARALLEL=1``) queues extra
requests; every queued request ages towards its client timeout while the one ahead of it
generates, so parallel callers (threads, or the processes of Dagster's multiprocess executor)
turn one slow answer into a cascade of time-outs. Each server (keyed by its base URL) gets
``concurrency`` slots; a request holds one slot from send to last byte.

The bound holds across processes on one machine: a slot is an exclusive ``flock`` on
``<lock dir>/<sha256(base URL)[:16]>.<i>.lock`` (released by the kernel if the process dies),
taken after an in-process semaphore so that threads of one process do not spin on the files.
The lock directory is ``EDAQA_LLM_LOCK_DIR`` or ``<tmp>/edaqa-llm-slots``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

POLL_S = 0.05

_SEMAPHORES: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_LOCK = threading.Lock()


def lock_dir() -> Path:
    configured = os.environ.get("EDAQA_LLM_LOCK_DIR", "").strip()
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "edaqa-llm-slots"


class SlotTimeout(TimeoutError):
    """No slot became free within the wait limit."""


class ServerSlots:
    """``concurrency`` request slots for the server at ``key`` (its base URL)."""

    def __init__(self, key: str, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError(f"LLM concurrency must be >= 1, got {concurrency}")
        self.key = key
        self.concurrency = int(concurrency)
        self._digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
        with _LOCK:
            self._semaphore = _SEMAPHORES.setdefault(
                (key, self.concurrency), threading.BoundedSemaphore(self.concurrency)
            )

    def __repr__(self) -> str:
        return f"ServerSlots({self.key!r}, concurrency={self.concurrency})"

    @contextlib.contextmanager
    def hold(self, wait_s: float | None = None) -> Iterator[float]:
        """Hold one slot for the ``with`` body; yields the seconds spent waiting for it."""
        started = time.monotonic()
        deadline = None if wait_s is None else started + wait_s
        if not self._semaphore.acquire(timeout=None if wait_s is None else max(wait_s, 0.0)):
            raise SlotTimeout(f"no free LLM request slot for {self.key} after {wait_s}s")
        try:
            with self._file_slot(deadline):
                yield time.monotonic() - started
        finally:
            self._semaphore.release()

    @contextlib.contextmanager
    def _file_slot(self, deadline: float | None) -> Iterator[None]:
        directory = lock_dir()
        directory.mkdir(parents=True, exist_ok=True)
        while True:
            for index in range(self.concurrency):
                path = directory / f"{self._digest}.{index}.lock"
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)
                    continue
                try:
                    yield
                    return
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
            if deadline is not None and time.monotonic() > deadline:
                raise SlotTimeout(f"no free LLM request slot for {self.key} (other processes hold all "
                                  f"{self.concurrency})")
            time.sleep(POLL_S)
