"""Progress of a run, for a person watching ``edaqa index`` (and for the benchmark's per-step
breakdown), without touching the event log.

Per-document steps report each document they finish (``document_done``); every step of the
index jobs reports its end through the ``step_finished`` hooks with the process's CPU time,
so that in an in-process run a listener sees documents, then each corpus step, and can tell
the CPU seconds of each step (the difference between consecutive step ends). Listeners are
process-local callables; with none registered (``dagster dev``, a Celery worker) the calls do
nothing.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dagster import HookContext, failure_hook, success_hook


@dataclass(frozen=True)
class ProgressEvent:
    kind: str  # "document" (one document of a per-document step) or "step" (a step ended)
    step: str
    done: int = 0
    total: int = 0
    success: bool = True
    cpu_s: float = 0.0  # process CPU time (user + system) at the event
    wall_s: float = 0.0  # time.perf_counter() at the event


Listener = Callable[[ProgressEvent], None]
_LISTENERS: list[Listener] = []


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Call ``listener`` with every progress event of this process while the block runs."""
    _LISTENERS.append(listener)
    try:
        yield
    finally:
        _LISTENERS.remove(listener)


def _emit(event: ProgressEvent) -> None:
    for listener in list(_LISTENERS):
        listener(event)


def document_done(step: str, done: int, total: int) -> None:
    if _LISTENERS:
        _emit(ProgressEvent("document", step, done, total, cpu_s=time.process_time(),
                            wall_s=time.perf_counter()))


def _step_event(context: HookContext, success: bool) -> None:
    if _LISTENERS:
        _emit(ProgressEvent("step", context.step_key, success=success, cpu_s=time.process_time(),
                            wall_s=time.perf_counter()))


@success_hook(name="step_succeeded")
def step_succeeded(context: HookContext) -> None:
    _step_event(context, True)


@failure_hook(name="step_failed")
def step_failed(context: HookContext) -> None:
    _step_event(context, False)


STEP_HOOKS = frozenset({step_succeeded, step_failed})
