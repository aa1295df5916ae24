"""Bounds that keep one pathological PDF from stalling a build.

A book-length manual is welcome; a file that claims 100,000 pages, or a page whose content
stream takes minutes to lay out, is not worth a stalled build. ``PdfLimits`` carries the page
count a file may have (checked before any page is read) and the seconds one page may take
(``EDAQA_MAX_PDF_PAGES``, ``EDAQA_PDF_PAGE_SECONDS``). A page over its time is left out and
reported like a damaged page; the rest of the file indexes.

The time bound is a ``SIGALRM`` timer when the parser runs on the main thread (the in-process
executor of ``edaqa index``, each step of the multiprocess executor): the page is interrupted
at the next Python-level step. Off the main thread no timer can be set; there, and wherever a
library swallows the timer's exception, the page's time is checked when it ends, and a page
over the bound is left out all the same.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from edaqa_pipeline.settings import DEFAULT_MAX_PDF_PAGES, DEFAULT_PDF_PAGE_SECONDS


@dataclass(frozen=True)
class PdfLimits:
    max_pages: int = DEFAULT_MAX_PDF_PAGES
    page_seconds: float = DEFAULT_PDF_PAGE_SECONDS


class PageTimeout(Exception):
    """A page that took longer than the per-page bound."""


@contextmanager
def page_time_bound(seconds: float) -> Iterator[None]:
    """Raise ``PageTimeout`` if the body runs longer than ``seconds`` (0 = no bound): by a
    timer that interrupts it (main thread), and in any case when it ends late (a library that
    swallows the timer's exception, as pymupdf's table finder does, still loses the page)."""
    message = f"took longer than {seconds:g} s (raise EDAQA_PDF_PAGE_SECONDS to wait longer)"
    if seconds <= 0:
        yield
        return
    started = time.monotonic()
    timer = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if timer:

        def expire(signum: int, frame: object) -> None:
            raise PageTimeout(message)

        previous = signal.signal(signal.SIGALRM, expire)
        outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        if timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if outer_delay > 0:  # a timer set around the parse (a test runner's) runs on
                left = max(outer_delay - (time.monotonic() - started), 0.001)
                signal.setitimer(signal.ITIMER_REAL, left, outer_interval)
    if time.monotonic() - started > seconds:
        raise PageTimeout(message)
