"""Measured LLM throughput, and progress with an estimate of the time left.

A local model on a CPU produces a few to a few dozen tokens per second, so a long LLM stage
must say how far it is and how long the rest will take. The estimate is made from what was
measured on this server, not from a guess: every streamed request records its decode rate
(completion tokens after the first, over the time between the first and the last token) and
its time to first token (queueing and prompt processing), and

    time left for a request  = (budget - tokens so far) / tokens_per_s
    time left for a batch    = remaining calls x (mean time to first token
                               + mean completion tokens per call / tokens_per_s)

``RequestProgress`` events are sent to the listeners of a client while a request streams (at
most every ``EMIT_EVERY_S``); ``BatchProgress`` turns completed calls into a one-line status.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

EMIT_EVERY_S = 0.25


@dataclass(frozen=True)
class RequestProgress:
    """One request in flight: tokens so far out of its budget, and the measured rate."""

    task: str
    tokens: int
    budget: int
    elapsed_s: float
    tokens_per_s: float | None
    done: bool = False

    @property
    def eta_s(self) -> float | None:
        """Worst-case seconds left (the rest of the budget at the measured rate)."""
        if self.done:
            return 0.0
        if not self.tokens_per_s:
            return None
        return max(self.budget - self.tokens, 0) / self.tokens_per_s

    def line(self) -> str:
        rate = f"{self.tokens_per_s:.1f} tok/s" if self.tokens_per_s else "measuring tok/s"
        eta = self.eta_s
        left = f", <= {format_seconds(eta)} left" if eta is not None and not self.done else ""
        return f"{self.task}: {self.tokens}/{self.budget} tokens, {rate}{left}"


ProgressListener = Callable[[RequestProgress], None]


def format_seconds(seconds: float) -> str:
    seconds = max(round(seconds), 0)
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Throughput:
    """Totals over the streamed requests of one client (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.decode_tokens = 0
        self.decode_s = 0.0
        self.first_token_s = 0.0
        self.completion_tokens = 0

    def record(self, *, completion_tokens: int, first_token_s: float, decode_s: float) -> None:
        with self._lock:
            self.requests += 1
            self.completion_tokens += completion_tokens
            self.first_token_s += first_token_s
            if completion_tokens > 1 and decode_s > 0:
                self.decode_tokens += completion_tokens - 1
                self.decode_s += decode_s

    @property
    def tokens_per_s(self) -> float | None:
        with self._lock:
            return self.decode_tokens / self.decode_s if self.decode_s > 0 else None

    def per_call_s(self) -> float | None:
        """Mean seconds of one call: time to first token plus its tokens at the decode rate."""
        rate = self.tokens_per_s
        with self._lock:
            if not self.requests or not rate:
                return None
            return (self.first_token_s + self.completion_tokens / rate) / self.requests

    def eta_s(self, remaining_calls: int) -> float | None:
        per_call = self.per_call_s()
        return None if per_call is None else remaining_calls * per_call


class BatchProgress:
    """Progress of ``total`` LLM calls of one stage: ``advance()`` after each; ``line()``."""

    def __init__(self, label: str, total: int, throughput: Throughput | None) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.started = time.monotonic()
        self.throughput = throughput

    def advance(self, n: int = 1) -> None:
        self.done += n

    def eta_s(self) -> float | None:
        if self.throughput is None:
            return None
        return self.throughput.eta_s(max(self.total - self.done, 0))

    def line(self) -> str:
        rate = self.throughput.tokens_per_s if self.throughput is not None else None
        parts = [f"{self.label} {self.done}/{self.total}"]
        if rate:
            parts.append(f"{rate:.1f} tok/s")
        eta = self.eta_s()
        if eta is not None and self.done < self.total:
            parts.append(f"ETA {format_seconds(eta)}")
        return ", ".join(parts)
