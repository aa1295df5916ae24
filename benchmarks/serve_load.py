"""``edaqa serve`` under concurrent clients: throughput, latency percentiles, errors, memory.

Starts ``edaqa serve --answers extractive --workers N`` on a free loopback port (stopped by
PID at the end), warms it for two seconds, then runs two phases of ``--seconds`` each: one client, and
``--clients`` clients at once. Every client is a thread with its own keep-alive connection
that posts ``/ask`` over the dev questions in turn (each client from its own offset). Printed
per phase: requests, requests/s, p50/p95/p99 latency, errors (any status but 200, or a failed
connection); then the ratios of the two phases, the server's CPU seconds, and its RSS after
the warm-up and at the end, summed over its processes (``--workers N``: the supervisor and N workers). On a
2-core machine 8 clients queue: the p95 ratio says how much.

    .venv/bin/python benchmarks/serve_load.py --storage /tmp/edaqa_matrix/or24 --clients 8 --seconds 60 --workers 2
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (``--workers N``: the supervisor and its worker processes)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            children = (task / "children").read_text().split() if (task / "children").exists() else []
            queue += [int(c) for c in children]
    return found


def tree_rss_mb(pid: int) -> float:
    return sum(rss_mb(p) for p in process_tree(pid))


def tree_cpu_s(pid: int) -> float:
    return sum(cpu_s(p) for p in process_tree(pid))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def run_phase(port: int, questions: list[str], clients: int, seconds: float, method: str,
              k: int) -> dict[str, float]:
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(offset: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        i = offset
        while time.monotonic() < stop_at:
            body = json.dumps({"question": questions[i % len(questions)], "method": method, "k": k})
            started = time.monotonic()
            try:
                conn.request("POST", "/ask", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                ok = resp.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            elapsed = time.monotonic() - started
            with lock:
                if ok:
                    latencies.append(elapsed)
                else:
                    errors[0] += 1
            i += 1
        conn.close()

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(n * 7,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    ms = [x * 1000 for x in latencies] or [0.0]
    return {"clients": clients, "requests": len(latencies), "errors": errors[0],
            "requests_per_s": len(latencies) / wall, "p50_ms": percentile(ms, 50),
            "p95_ms": percentile(ms, 95), "p99_ms": percentile(ms, 99)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--storage", required=True)
    parser.add_argument("--qa", default=str(REPO / "data" / "dev" / "openroad_dev.jsonl"))
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--method", default="edaqa")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1, help="edaqa serve --workers")
    args = parser.parse_args()

    from edaqa_pipeline.evaluation.qa import load_qa
    from edaqa_pipeline_tests.llm_servers import _default_signals, free_port, stop_process

    questions = [item.question for item in load_qa(args.qa, "auto", None)]
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EDAQA_LLM", "OPENAI"))}
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.Popen([sys.executable, "-m", "edaqa_pipeline.cli", "serve", "--storage", args.storage,
                             "--port", str(port), "--answers", "extractive", "--method", args.method,
                             "--workers", str(args.workers)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            preexec_fn=_default_signals)
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("edaqa serve did not start") from None
                time.sleep(0.5)
        # the first requests build the retriever (of every worker: each gets a few)
        run_phase(port, questions, 2 * args.workers, 2.0, args.method, args.k)
        rss_start, cpu_start = tree_rss_mb(proc.pid), tree_cpu_s(proc.pid)
        print(f"{len(questions)} questions of {args.qa}; {args.workers} worker(s); server RSS (all its "
              f"processes) after warm-up {rss_start:.0f} MB; "
              f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}", flush=True)
        phases = []
        for clients in (1, args.clients):
            phase = run_phase(port, questions, clients, args.seconds, args.method, args.k)
            phases.append(phase)
            print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in phase.items()}),
                  flush=True)
        rss_end = tree_rss_mb(proc.pid)
        one, many = phases
        print(json.dumps({
            "throughput_ratio": round(many["requests_per_s"] / max(one["requests_per_s"], 1e-9), 2),
            "p95_ratio": round(many["p95_ms"] / max(one["p95_ms"], 1e-9), 2),
            "errors": one["errors"] + many["errors"],
            "server_cpu_s": round(tree_cpu_s(proc.pid) - cpu_start, 1),
            "rss_start_mb": round(rss_start), "rss_end_mb": round(rss_end),
            "rss_growth": round(rss_end / rss_start - 1, 3),
        }), flush=True)
    finally:
        stop_process(proc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
