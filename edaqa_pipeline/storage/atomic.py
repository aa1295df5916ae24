"""Atomic JSON files: a reader sees the old file or the new one, never half of one.

Used for what lives outside Dagster's tables and is read by other processes at any moment:
the LLM response cache and the ONNX export's sidecar. The value is written to a temporary file
in the target's folder (so the rename stays on one file system), flushed to disk, then renamed
over the target; a failed write leaves no temporary file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json(path: Path, value: Any, **dump_options: Any) -> Path:
    """Write ``value`` as JSON to ``path`` atomically; ``dump_options`` go to ``json.dump``."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(value, fh, **dump_options)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path
