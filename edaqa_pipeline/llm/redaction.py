"""Keeping the API key out of every log line that the HTTP stack writes.

openai and httpx log failed calls verbatim, and a server may quote the API key back in an
error body. One process-wide logging filter rewrites such records before any handler sees them.
"""

from __future__ import annotations

import logging
import threading

from edaqa_pipeline.llm.errors import redact

# Libraries that log failed calls verbatim (instructor is listed because other code may use it).
_CHATTY_LOGGERS = ("instructor", "openai", "httpx", "httpcore")
_LOCK = threading.Lock()


class RedactSecretsFilter(logging.Filter):
    """Rewrites log records so that no registered secret (API key) reaches any handler.

    A filter on a logger only sees records logged *on that logger*, not its children's, so
    ``install`` attaches the one process-wide instance to every existing logger under
    ``_CHATTY_LOGGERS`` (they are created at import time, before any call is made)."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        clean = redact(message, *self.secrets)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info:
            text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(text, *self.secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, *self.secrets)
        return True

    def install(self, secret: str) -> None:
        with _LOCK:
            self.secrets.add(secret)
            names = [n for n in list(logging.Logger.manager.loggerDict)
                     if n.split(".")[0] in _CHATTY_LOGGERS]
            for name in (*_CHATTY_LOGGERS, *names):
                logger = logging.getLogger(name)
                if self not in logger.filters:
                    logger.addFilter(self)


REDACT_SECRETS = RedactSecretsFilter()
