"""What one caller's request asks of every model call made on its behalf.

A server answers many requests at once, each in its own thread, and one answer may make
several model calls (the retriever's query analysis, the answer, a re-ask). The limits a
request carries (a deadline, an output budget, a listener for the text as it streams) must
reach all of them without being threaded through every signature in between. A
``contextvars`` scope does that: ``with request_scope(deadline_s=30): ...`` applies to the
model calls of that thread only, and ``OpenAICompatibleClient`` reads it at each request:

* ``deadline``: no request starts after it, a slot is waited for only until it, and a request
  in flight is cancelled at it (its connection closed, so its server slot is freed);
* ``max_tokens``: a cap on the output budget of the answer-writing tasks (those that
  ``answer_tasks`` names), never raising a task's own budget;
* ``on_text``: called with the text generated so far, as a plain-text answer streams, so a
  caller can verify and show a sentence before the model has finished the rest.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class RequestScope:
    """The limits of one request; ``deadline`` is a ``time.monotonic()`` instant."""

    deadline: float | None = None
    max_tokens: int | None = None
    answer_tasks: frozenset[str] = frozenset()
    on_text: Callable[[str], None] | None = None

    def remaining_s(self) -> float | None:
        """Seconds left before the deadline (never negative); None when there is none."""
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)

    @property
    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def budget(self, task: str, budget: int) -> int:
        """``budget`` capped by ``max_tokens`` when ``task`` writes the answer."""
        if self.max_tokens is None or task not in self.answer_tasks:
            return budget
        return max(min(budget, self.max_tokens), 1)


NO_LIMITS = RequestScope()
_CURRENT: contextvars.ContextVar[RequestScope | None] = contextvars.ContextVar(
    "edaqa_llm_request_scope", default=None)


class DeadlinePassed(TimeoutError):
    """The request's deadline passed before a model call could start."""


def current_scope() -> RequestScope:
    """The scope of the running request; ``NO_LIMITS`` outside any."""
    return _CURRENT.get() or NO_LIMITS


@contextlib.contextmanager
def request_scope(*, deadline_s: float | None = None, max_tokens: int | None = None,
                  answer_tasks: frozenset[str] = frozenset(),
                  on_text: Callable[[str], None] | None = None) -> Iterator[RequestScope]:
    """Apply the limits to the model calls of the ``with`` body (this thread or task only).

    ``deadline_s`` counts from now; an enclosing scope's earlier deadline still holds."""
    outer = current_scope()
    deadline = None if deadline_s is None else time.monotonic() + deadline_s
    if outer.deadline is not None:
        deadline = outer.deadline if deadline is None else min(deadline, outer.deadline)
    scope = RequestScope(deadline=deadline,
                         max_tokens=max_tokens if max_tokens is not None else outer.max_tokens,
                         answer_tasks=answer_tasks or outer.answer_tasks,
                         on_text=on_text or outer.on_text)
    token = _CURRENT.set(scope)
    try:
        yield scope
    finally:
        _CURRENT.reset(token)
