"""The judged-metrics benchmark: tracegrade's judged metrics against a local judge server.

The server (bench/judge_server.py) runs in a child process, so its work does not share
the client's interpreter, and answers every request after a fixed latency. Samples are
bench/generate.py conversations with ``reference_topics`` and a ``reference`` outcome,
built into tracegrade samples before any clock starts. Every run uses the Python API
(``tracegrade.evaluate``) with an ``OpenAIJudge`` on the server's URL, as the CLI's
``attach_judge`` makes it: ``max_concurrency`` equal to the run's ``concurrency``.

Scenarios:

- judge calls per sample, each judged metric alone (TopicAdherenceScore for 1, 5 and 20
  reference topics): requests the server saw / samples;
- throughput at concurrency 1, 8 and 64, the three judged metrics together, no cache,
  best of three runs, each about 100 latencies long (:data:`ROUNDS`) so that the
  pipeline's filling and draining weigh little. A sample's three calls run at once,
  and the judge lets ``concurrency`` requests be in flight, so requests/s <=
  concurrency / latency (the bound); samples/s <= that / calls per sample. Each run
  also reports the client's CPU time per request (t_cpu) and, for diagnosis, what the
  run would reach if the requests in flight moved in lockstep, each wave paying every
  request's CPU time on the client's one event loop:
  concurrency / (latency + concurrency * t_cpu);
- the judge cache: a run filling a fresh cache file, then the same samples again.

    python bench/judged.py [--latency 0.1] [--quick]

prints one JSON line (see :func:`run_judged`).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import conversations
from judge_server import JudgeServer, JudgeServerProcess

from tracegrade import evaluate
from tracegrade.io.dataset import parse_record
from tracegrade.judge.client import OpenAIJudge
from tracegrade.metrics.base import Metric
from tracegrade.metrics.goal import (
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
)
from tracegrade.metrics.topic import TopicAdherenceScore
from tracegrade.model.samples import MultiTurnSample

MODEL = "bench-judge"
PLACEHOLDER_KEY = "bench-no-key"  # never a real key, whatever the environment holds
TOPICS = [
    "flights",
    "hotels",
    "weather",
    "email",
    "orders",
    "support tickets",
    "currency exchange",
    "documentation",
    "calendar",
    "databases",
    "billing",
    "refunds",
    "shipping",
    "contracts",
    "budgets",
    "meetings",
    "reports",
    "forecasts",
    "customers",
    "invoices",
    "travel insurance",
    "car rental",
    "loyalty points",
    "visas",
]
METRICS: dict[str, Callable[[OpenAIJudge], Metric]] = {
    "topic_adherence": lambda judge: TopicAdherenceScore(llm=judge),
    "agent_goal_accuracy_with_reference": lambda judge: AgentGoalAccuracyWithReference(llm=judge),
    "agent_goal_accuracy_without_reference": lambda judge: AgentGoalAccuracyWithoutReference(
        llm=judge
    ),
}
TARGET_CALLS = {
    "topic_adherence": 2,
    "agent_goal_accuracy_with_reference": 1,
    "agent_goal_accuracy_without_reference": 1,
}
Server = JudgeServer | JudgeServerProcess


def judged_records(count: int, seed: int = 0, topics: int | None = None) -> list[dict[str, Any]]:
    """``count`` generated conversations with ``reference_topics`` (``topics`` of them,
    else 3-6 drawn per sample) and a ``reference`` outcome naming the tools used."""
    rng = random.Random(seed + 1)
    records = []
    for record in conversations(count, seed):
        wanted = topics if topics is not None else rng.randint(3, 6)
        record["reference_topics"] = rng.sample(TOPICS, wanted)
        messages = record["user_input"]
        tools = dict.fromkeys(
            call["name"] for message in messages for call in message.get("tool_calls") or ()
        )
        record["reference"] = (
            f"The agent used {', '.join(tools) or 'no tools'} and ended with: "
            f"{messages[-1]['content']}"
        )
        records.append(record)
    return records


def judged_samples(count: int, seed: int = 0, topics: int | None = None) -> list[MultiTurnSample]:
    """:func:`judged_records` validated into samples (done before any timing)."""
    samples = []
    for index, record in enumerate(judged_records(count, seed, topics)):
        sample = parse_record(record, index)
        assert isinstance(sample, MultiTurnSample)
        samples.append(sample)
    return samples


def run_once(
    server: Server,
    samples: Sequence[MultiTurnSample],
    names: Sequence[str],
    concurrency: int,
    cache: Path | None,
) -> dict[str, Any]:
    """Score ``samples`` with the metrics ``names`` through one fresh judge; what the
    run took, by the clock and by the server's counts."""
    judge = OpenAIJudge(
        MODEL,
        base_url=server.url,
        api_key=PLACEHOLDER_KEY,
        max_concurrency=concurrency,
        cache=cache if cache is not None else False,
    )
    metrics = [METRICS[name](judge) for name in names]
    server.reset()
    cpu = time.process_time()
    start = time.perf_counter()
    result = evaluate(list(samples), metrics, concurrency=concurrency, progress=False)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    stats = server.stats()
    usage = result.usage
    failed = sum(1 for row in result.rows if row.errors or row.rejected)
    count = len(samples)
    requests = stats["requests"]
    return {
        "samples": count,
        "seconds": round(seconds, 4),
        "requests": requests,
        "requests_per_sample": round(requests / count, 4),
        "requests_per_s": round(requests / seconds, 2),
        "samples_per_s": round(count / seconds, 2),
        "max_in_flight": stats["max_in_flight"],
        "mean_in_flight": round(stats["in_flight_seconds"] / seconds, 2),
        "client_cpu_s": round(cpu, 3),
        "client_cpu_ms_per_request": round(1000 * cpu / requests, 3) if requests else None,
        "server_cpu_s": round(stats["cpu_seconds"], 3),
        "cached_answers": usage.cached if usage is not None else 0,
        "failed_samples": failed,
        "means": {name: _mean(result[name]) for name in names},
    }


def _mean(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return round(sum(known) / len(known), 4) if known else None


def calls_per_sample(server: Server, count: int) -> dict[str, Any]:
    """Each judged metric alone over ``count`` samples: server requests per sample
    (TopicAdherenceScore for 1, 5 and 20 reference topics)."""
    found: dict[str, Any] = {}
    topic: dict[str, float] = {}
    for topics in (1, 5, 20):
        samples = judged_samples(count, seed=10 + topics, topics=topics)
        run = run_once(server, samples, ["topic_adherence"], 64, None)
        topic[str(topics)] = run["requests_per_sample"]
    found["topic_adherence"] = {"by_topic_count": topic, "max": max(topic.values())}
    samples = judged_samples(count, seed=3)
    for name in ("agent_goal_accuracy_with_reference", "agent_goal_accuracy_without_reference"):
        run = run_once(server, samples, [name], 64, None)
        found[name] = {"max": run["requests_per_sample"]}
    for name, entry in found.items():
        entry["target"] = TARGET_CALLS[name]
        entry["met"] = entry["max"] <= TARGET_CALLS[name]
    return found


def throughput(
    server: Server, latency: float, sizes: dict[int, int], repeats: int
) -> list[dict[str, Any]]:
    """The three judged metrics together at each concurrency (no cache), best of
    ``repeats`` runs, against the bound requests/s = concurrency / latency."""
    names = list(METRICS)
    runs = []
    for concurrency, count in sizes.items():
        samples = judged_samples(count, seed=100 + concurrency)
        tries = [run_once(server, samples, names, concurrency, None) for _ in range(repeats)]
        best = min(tries, key=lambda run: run["seconds"])
        best["repeats_requests_per_s"] = [run["requests_per_s"] for run in tries]
        bound_rps = concurrency / latency
        calls = best["requests_per_sample"]
        bound_sps = bound_rps / calls if calls else None
        best.update(
            concurrency=concurrency,
            bound_requests_per_s=round(bound_rps, 2),
            bound_samples_per_s=round(bound_sps, 2) if bound_sps else None,
            measured_over_bound=round(best["requests_per_s"] / bound_rps, 4),
        )
        cpu = best["client_cpu_ms_per_request"]
        if cpu:
            best["client_cpu_ceiling_requests_per_s"] = round(1000 / cpu, 1)
            lockstep = concurrency / (latency + concurrency * cpu / 1000)
            best["lockstep_estimate_requests_per_s"] = round(lockstep, 1)
        best["within_10pct"] = best["measured_over_bound"] >= 0.9
        runs.append(best)
    return runs


def cached_rerun(server: Server, count: int, concurrency: int) -> dict[str, Any]:
    """Fill a fresh cache file in a temporary folder, then score the same samples again
    with a new judge on that file: the rerun should send nothing."""
    names = list(METRICS)
    samples = judged_samples(count, seed=7)
    with tempfile.TemporaryDirectory(prefix="tracegrade-bench-") as folder:
        path = Path(folder) / "judge.sqlite"
        first = run_once(server, samples, names, concurrency, path)
        second = run_once(server, samples, names, concurrency, path)
    return {
        "cache": "fresh file in a temporary folder (OpenAIJudge(cache=path))",
        "concurrency": concurrency,
        "first": first,
        "rerun": second,
        "rerun_requests": second["requests"],
        "same_scores": first["means"] == second["means"],
        "met": second["requests"] == 0,
    }


ROUNDS = 100
"""How many latencies a throughput run lasts at full pipeline: the pipeline fills at the
start and drains at the end, each costing up to one round, so a run of a few rounds
measures that, not throughput."""


def _samples_for(rounds: int, concurrency: int) -> int:
    """Samples whose requests (three each) fill ``rounds`` rounds of ``concurrency``."""
    return -(-rounds * concurrency // len(METRICS))


def run_judged(
    latency: float = 0.1, quick: bool = False, in_process: bool = False
) -> dict[str, Any]:
    """Every judged scenario against a judge server with ``latency`` seconds per reply;
    ``quick`` runs tiny sizes (a smoke test of a second or two at latency 0.01)."""
    if quick:
        latency = min(latency, 0.01)
        sizes, per_metric, cache_count, repeats = {1: 3, 8: 16, 64: 32}, 4, 12, 1
    else:
        sizes = {concurrency: _samples_for(ROUNDS, concurrency) for concurrency in (1, 8, 64)}
        per_metric, cache_count, repeats = 64, 200, 3
    started = time.perf_counter()
    server: Server = JudgeServer(latency) if in_process else JudgeServerProcess(latency)
    with server:
        run_once(server, judged_samples(8, seed=999), list(METRICS), 8, None)  # warm up
        calls = calls_per_sample(server, per_metric)
        speed = throughput(server, latency, sizes, repeats)
        cache = cached_rerun(server, cache_count, 64)
    return {
        "bench": "judged",
        "latency_s": latency,
        "server": "in-process thread" if in_process else "child process",
        "throughput_metrics": list(METRICS),
        "throughput_cache": "off (OpenAIJudge(cache=False))",
        "throughput_runs": "best of the repeats; every repeat's requests/s listed",
        "throughput_repeats": repeats,
        "throughput_rounds": ROUNDS if not quick else None,
        "bound": "requests/s <= in-flight limit / latency, the limit being the judge's "
        "max_concurrency = evaluate's concurrency; samples/s = that / calls per sample",
        "calls_per_sample": calls,
        "throughput": speed,
        "cached_rerun": cache,
        "targets": {
            "calls_per_sample": all(entry["met"] for entry in calls.values()),
            "throughput_within_10pct": {
                str(run["concurrency"]): run["within_10pct"] for run in speed
            },
            "cached_rerun_zero_calls": cache["met"],
        },
        "seconds": round(time.perf_counter() - started, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument(
        "--in-process", action="store_true", help="run the server in a thread of this process"
    )
    options = parser.parse_args()
    result = run_judged(options.latency, options.quick, options.in_process)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
