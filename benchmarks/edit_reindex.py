"""One document edited, then re-indexed: the share of a full build (the target: <= 10%).

    .venv/bin/python benchmarks/edit_reindex.py ../shared/corpus/openroad-2024 [--workdir DIR]

On a copy of the corpus, each step a real ``edaqa index`` (child processes, wall clock):

1. the full core build on a fresh storage root;
2. an edit of one document (a sentence appended to a paragraph), then ``edaqa index`` in a new
   process: what a cron job or a person re-running the command pays, start-up included;
3. ``edaqa index --watch`` started on the same root (nothing to do), then two more documents
   edited one after the other: the time from the write to the ``re-indexed`` line. The first
   edit pays the first imports of the steps (great-expectations, the encoder session), the
   second is the warm figure: what an edit costs a process that stays.

Two floors of the new-process path are measured in the same run, each in a child process:
``edaqa index`` with nothing to do (start-up, the state check, the manifest), and the imports
alone of the libraries an edit's run loads (``IMPORTS``: Dagster, great-expectations for the
partition's data checks, LanceDB, ONNX Runtime, Polars and the definitions). Their share of the
full build says how low the new-process figure can go while the process imports them.

Prints one JSON line with the seconds and each figure's share of the full build.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "edaqa"
EDITED = ("gpl.md", "cts.md", "grt.md")
IMPORTS = ("dagster", "great_expectations", "lancedb", "onnxruntime", "tokenizers", "polars",
           "edaqa_pipeline.definitions")


def edit(path: Path, tag: str) -> None:
    text = path.read_text(encoding="utf-8")
    at = text.index("\n\n", len(text) // 2)
    path.write_text(text[:at] + f" This sentence was added by the edit benchmark ({tag})." + text[at:],
                    encoding="utf-8")


def timed(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    return time.perf_counter() - started


def watched_edits(corpus: Path, storage: Path, names: tuple[str, ...]) -> list[float]:
    """Seconds from each edit's write to the watcher's ``re-indexed`` line."""
    proc = subprocess.Popen([str(BIN), "index", "--corpus", str(corpus), "--storage", str(storage),
                             "--quiet", "--watch", "0.1"], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, HF_HUB_OFFLINE="1"), start_new_session=True)
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if line.startswith("watching"):
                break
        seconds = []
        for name in names:
            started = time.perf_counter()
            edit(corpus / name, "watch")
            for line in proc.stdout:
                if line.startswith("re-indexed"):
                    seconds.append(time.perf_counter() - started)
                    break
        return seconds
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/edaqa_edit_bench"))
    args = parser.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    corpus, storage = args.workdir / "corpus", args.workdir / "storage"
    shutil.copytree(args.corpus, corpus)
    index = [str(BIN), "index", "--corpus", str(corpus), "--storage", str(storage), "--quiet"]
    full = timed(index)
    no_op = timed(index)
    imports = timed([sys.executable, "-c", "import " + ", ".join(IMPORTS)])
    edit(corpus / EDITED[0], "new process")
    new_process = timed(index)
    first, warm = watched_edits(corpus, storage, EDITED[1:])
    print(json.dumps({"corpus": str(args.corpus), "full_build_s": round(full, 2),
                      "no_op_new_process_s": round(no_op, 2), "share_no_op": round(no_op / full, 3),
                      "imports_s": round(imports, 2), "share_imports": round(imports / full, 3),
                      "edit_new_process_s": round(new_process, 2), "share_new_process": round(new_process / full, 3),
                      "edit_watch_first_s": round(first, 2), "edit_watch_warm_s": round(warm, 2),
                      "share_watch_warm": round(warm / full, 3),
                      "load": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    sys.exit(main())
