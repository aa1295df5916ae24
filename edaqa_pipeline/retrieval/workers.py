"""The process's background worker for query encodings: the one piece of process-global state
on the question path.

A method that needs two encodings of one question (EDAQA: the function-aware space for its
chunk paths and the base space for the element rerank; TechDocRAG: the summary rerank's
vector while identifier recall runs) starts the second in this worker and joins it later.
ONNX Runtime releases the GIL, so the two share the wall time instead of adding up.

Why one worker and why process-global: encoder sessions run on one intra-op thread each (see
``retrieval.onnx_encoder``), so one background encoding beside the caller's is what two cores
give; a pool per retriever would start a thread for every method of an evaluation (twenty
retrievers) and leave them behind. Why the pid check: a forked child (Dagster's multiprocess
executor, a Celery worker) inherits the parent's pool object but not its thread, and a job
submitted there would never run; the child makes its own.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_LOCK = threading.Lock()
_POOL: tuple[int, ThreadPoolExecutor] | None = None


def encoding_pool() -> ThreadPoolExecutor:
    """This process's one-thread executor for background query encodings."""
    global _POOL
    with _LOCK:
        if _POOL is None or _POOL[0] != os.getpid():
            _POOL = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="edaqa-encode"))
        return _POOL[1]
