"""Latency and throughput of the LLM layer against a real local model (SmolLM2 via llama.cpp).

Why: the pipeline's LLM stages are sized from these numbers (calls x mean latency), and the
re-run shows what the response cache saves. Starts its own llama.cpp server unless --base-url
is given, runs N structured calls through ``OpenAICompatibleClient`` (instructor, TOOLS mode),
then repeats them with the same cache directory.

    .venv/bin/python benchmarks/llm_latency.py [--calls 10] [--base-url URL --model NAME]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from edaqa_pipeline.llm import OpenAICompatibleClient
from edaqa_pipeline_tests.llm_servers import (
    DocFacts,
    llama_server,
    missing_local_llm,
    register_sample_tasks,
)

TOPICS = [
    (
        "Clock Gating",
        "set_clock_gating_style selects the clock gating cell for insert_clock_gating.",
    ),
    ("Placement", "place_opt runs timing-driven placement and fixes design rule violations."),
    ("Routing", "route_auto performs global routing, track assignment and detail routing."),
    (
        "Timing Reports",
        "report_timing shows the worst paths with slack, arrival and required time.",
    ),
    ("Power Analysis", "report_power lists leakage, internal and switching power per hierarchy."),
    ("Floorplanning", "initialize_floorplan sets the core utilization, aspect ratio and offsets."),
    ("Synthesis", "compile_ultra maps RTL to gates with boundary optimization and retiming."),
    ("Constraints", "create_clock defines a clock with a period and waveform on a port."),
    ("ECO", "eco_netlist compares two netlists and writes the changes as ECO commands."),
    ("Signoff", "check_lvs compares the layout netlist against the schematic netlist."),
]


@contextlib.contextmanager
def _server(base_url: str | None) -> Iterator[str]:
    if base_url:
        yield base_url
        return
    reason = missing_local_llm()
    if reason:
        raise SystemExit(reason)
    with llama_server() as url:
        yield url


def _run(client: OpenAICompatibleClient, calls: int) -> list[float]:
    latencies = []
    for i in range(calls):
        title, body = TOPICS[i % len(TOPICS)]
        text = f"{title}\n{body}" + (f" (variant {i // len(TOPICS)})" if i >= len(TOPICS) else "")
        started = time.perf_counter()
        client.complete_structured("test_doc_facts", {"text": text}, DocFacts)
        latencies.append(time.perf_counter() - started)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--base-url", default=None, help="use a running server instead")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()
    register_sample_tasks()

    with _server(args.base_url) as base_url, tempfile.TemporaryDirectory() as cache_dir:

        def client() -> OpenAICompatibleClient:
            return OpenAICompatibleClient(
                base_url, None, args.model, Path(cache_dir), timeout_s=120, max_retries=1,
                validation_retries=3, max_tokens=args.max_tokens,
            )  # fmt: skip

        # Warm-up on a text outside the measured set: the first prompt pays one-off setup.
        client().complete_structured("test_doc_facts", {"text": "Warm-up\nhello"}, DocFacts)
        cold_client = client()
        cold = _run(cold_client, args.calls)
        warm_client = client()
        warm = _run(warm_client, args.calls)

    s = cold_client.stats
    report = {
        "model": args.model,
        "calls": args.calls,
        "requests": s.calls,
        "retries": s.retries,
        "errors": s.errors,
        "mean_latency_s": round(statistics.mean(cold), 3),
        "median_latency_s": round(statistics.median(cold), 3),
        "max_latency_s": round(max(cold), 3),
        "prompt_tokens_per_call": round(s.prompt_tokens / max(args.calls, 1), 1),
        "completion_tokens_per_call": round(s.completion_tokens / max(args.calls, 1), 1),
        "completion_tokens_per_s": round(s.completion_tokens / sum(cold), 1),
        "total_tokens_per_s": round((s.prompt_tokens + s.completion_tokens) / sum(cold), 1),
        "rerun_cache_hit_rate": round(warm_client.stats.cache_hits / args.calls, 3),
        "rerun_requests": warm_client.stats.calls,
        "rerun_mean_latency_ms": round(1000 * statistics.mean(warm), 2),
    }
    for key, value in report.items():
        print(f"{key:>28}: {value}")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
