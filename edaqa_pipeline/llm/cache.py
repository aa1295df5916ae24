"""Content-addressed, on-disk cache of validated LLM responses.

An LLM build over a corpus is slow and costs money; if it is interrupted it must resume
without paying twice. Each response is stored under the sha256 of everything that determines
it (provider, model, task, both prompts, the response schema, temperature), one small JSON file
per key, written atomically (temporary file + ``os.replace``) so a crash never leaves a
half-written entry. Only responses that passed schema and task validation are ever stored.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from edaqa_pipeline.storage.atomic import write_json

CACHE_FORMAT_VERSION = 1


def cache_key(
    *,
    provider: str,
    model: str,
    task: str,
    system_prompt: str,
    user_prompt: str,
    schema: Mapping[str, Any],
    temperature: float,
) -> str:
    """The sha256 hex digest identifying one structured call."""
    payload = {
        "v": CACHE_FORMAT_VERSION,
        "provider": provider,
        "model": model,
        "task": task,
        "system": system_prompt,
        "user": user_prompt,
        "schema": schema,
        "temperature": round(float(temperature), 6),
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Files ``<root>/<key[:2]>/<key>.json`` holding ``{"response": <validated JSON>, ...}``."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.root)!r})"

    def path_for(self, key: str) -> Path:
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"not a sha256 hex key: {key!r}")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response JSON, or ``None`` when absent or unreadable (treated as a miss)."""
        try:
            entry = json.loads(self.path_for(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        response = entry.get("response") if isinstance(entry, dict) else None
        return response if isinstance(response, dict) else None

    def put(self, key: str, response: Mapping[str, Any], **meta: str) -> Path:
        """Atomically write ``response`` (already validated) with a little provenance."""
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"key": key, **meta, "response": dict(response)}
        return write_json(path, entry, ensure_ascii=False, sort_keys=True)

    def discard(self, key: str) -> None:
        with contextlib.suppress(OSError):
            self.path_for(key).unlink()

    def keys(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        for path in sorted(self.root.glob("??/*.json")):
            yield path.stem

    def __len__(self) -> int:
        return sum(1 for _ in self.keys())
