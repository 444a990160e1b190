"""The judged-metrics benchmark: tracegrade's judged metrics against a local judge server.

The server (bench/judge_server.py) runs in a child process, so its work does not share
the client's interpreter, and answers every request after a fixed latency. Samples are
bench/generate.py conversations with ``reference_topics`` and a ``reference`` outcome,
built into tracegrade samples before any clock starts. Every run uses the Python API
(``tracegrade.evaluate``) with an ``OpenAIJudge`` on the server's URL, as the CLI's
``attach_judge`` makes it: ``max_concurrency`` equal to the run's ``concurrency``.

Two groups of judged metrics are measured the same way (see :data:`GROUPS`): the first
three (topic adherence and the two goal accuracies), and issue 32's: ``trajectory_judge``,
three ``criteria`` side by side, each under its own name (pass/fail, a numbered rubric, a
named one), and ``tool_call_f1`` holding a semantic argument rule on ``city``,
``origin`` and ``destination``. That group scores the same conversations with the
reference's places written another way in about half of its calls (:func:`reworded`:
``"Berlin"`` as ``"BER"``, ``"BER"`` as ``"Berlin (BER)"``...): nine samples in ten
meet pairs for the rule, about eight on average and up to a few dozen (the metric
compares each of the agent's calls with each reference call of its tool).

Scenarios:

- judge calls per sample, each judged metric alone (TopicAdherenceScore for 1, 5 and 20
  reference topics; trajectory_judge with and without the reference; the three
  criteria together, counted per criterion; the semantic rule per sample, from each
  score's own count, however many pairs the sample has): requests the server saw /
  samples;
- throughput at concurrency 1, 8 and 64, the three judged metrics together, no cache,
  best of three runs, each about 100 latencies long (:data:`ROUNDS`) so that the
  pipeline's filling and draining weigh little. A sample's three calls run at once,
  and the judge lets ``concurrency`` requests be in flight, so requests/s <=
  concurrency / latency (the bound); samples/s <= that / calls per sample. Each run
  also reports the client's CPU time per request (t_cpu) and, for diagnosis, what the
  run would reach if the requests in flight moved in lockstep, each wave paying every
  request's CPU time on the client's one event loop:
  concurrency / (latency + concurrency * t_cpu);
  The same for issue 32's group, whose samples take about 4.9 calls;
- the judge cache, each group: a run filling a fresh cache file, then the same samples
  again.

    python bench/judged.py [--latency 0.1] [--quick] [--group NAME] [--doc docs/benchmarks.md]

prints one JSON line (see :func:`run_judged`); ``--doc`` also puts the judged section and
its rows of the targets table into that page, in place of those there.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import AIRPORTS, CITIES, conversations
from judge_server import JudgeServer, JudgeServerProcess

from tracegrade import evaluate
from tracegrade.io.dataset import parse_record
from tracegrade.judge.client import OpenAIJudge
from tracegrade.metrics.arguments import ArgumentMatch
from tracegrade.metrics.base import Metric
from tracegrade.metrics.criteria import Criteria
from tracegrade.metrics.goal import (
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
)
from tracegrade.metrics.semantic import semantic
from tracegrade.metrics.tool_call_f1 import ToolCallF1
from tracegrade.metrics.topic import TopicAdherenceScore
from tracegrade.metrics.trajectory_judge import TrajectoryJudge
from tracegrade.model.samples import MultiTurnSample
from tracegrade.run.results import EvaluationResult

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
CRITERIA: dict[str, dict[str, Any]] = {
    "criteria_reports_results": {
        "criteria": "The agent's final answers say what the tools returned, and claim "
        "nothing the tool results do not show."
    },
    "criteria_tool_choice": {
        "criteria": "Each tool the agent calls fits what the user asked for at that point.",
        "rubric": {
            1: "most calls do not fit the request",
            3: "some calls fit, others are beside the point",
            5: "every call fits the request",
        },
    },
    "criteria_tone": {
        "criteria": "The agent's messages are short, polite and plain.",
        "rubric": {
            "poor": "curt, rambling or unclear",
            "fair": "clear but wordy or stiff",
            "good": "short, polite and plain",
        },
    },
}
"""Three criteria run side by side, each under its own name: pass/fail, a numbered
rubric and a named one."""
SEMANTIC = "tool_call_f1_semantic"
SEMANTIC_ARGUMENTS = ("city", "origin", "destination")
SEMANTIC_SPEC = "tool_call_f1:matching=typed+" + "+".join(
    f"{argument}=semantic" for argument in SEMANTIC_ARGUMENTS
)
"""The semantic rule's metric as the command line writes it (run here under the name
:data:`SEMANTIC`)."""


def _semantic_metric(judge: OpenAIJudge) -> Metric:
    rule = ArgumentMatch(
        mode="typed", arguments={argument: semantic() for argument in SEMANTIC_ARGUMENTS}
    )
    metric = ToolCallF1(matching=rule, name=SEMANTIC)
    metric.llm = judge
    return metric


NEW_METRICS: dict[str, Callable[[OpenAIJudge], Metric]] = {
    "trajectory_judge": lambda judge: TrajectoryJudge(llm=judge),
    **{
        name: lambda judge, name=name, options=options: Criteria(name=name, llm=judge, **options)
        for name, options in CRITERIA.items()
    },
    SEMANTIC: _semantic_metric,
}
"""Issue 32's judged metrics, by the name each scores under."""
GROUPS: dict[str, dict[str, Callable[[OpenAIJudge], Metric]]] = {
    "topic_goal": METRICS,
    "trajectory_criteria_semantic": NEW_METRICS,
}
"""The groups of judged metrics measured together, by name."""
BUILDERS = {**METRICS, **NEW_METRICS}
TARGET_CALLS = {
    "topic_adherence": 2,
    "agent_goal_accuracy_with_reference": 1,
    "agent_goal_accuracy_without_reference": 1,
    "trajectory_judge": 1,
    "criteria": 1,
    "semantic": 1,
}
"""The most judge calls per sample: per criterion for ``criteria``, per sample however
many pairs it has for ``semantic``."""
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


CITY_OF = dict(zip(AIRPORTS, CITIES, strict=True))
AIRPORT_OF = dict(zip(CITIES, AIRPORTS, strict=True))


def _place_written_otherwise(value: Any, rng: random.Random) -> Any:
    """A city or an airport code written another way: a city as its airport's code,
    in capitals, or with ``city centre``; a code as its city, or the city with the code."""
    if value in AIRPORT_OF:
        return rng.choice([AIRPORT_OF[value], value.upper(), f"{value} city centre"])
    if value in CITY_OF:
        return rng.choice([CITY_OF[value], f"{CITY_OF[value]} ({value})"])
    return value


def reworded(record: dict[str, Any], seed: int) -> dict[str, Any]:
    """``record`` with about half of its reference calls' ``city``, ``origin`` and
    ``destination`` values written another way (the agent's calls as they were)."""
    rng = random.Random(f"{seed}-{record['id']}")
    calls = []
    for call in record["reference_tool_calls"]:
        args = dict(call["args"])  # the generator shares args with the agent's call
        for argument in SEMANTIC_ARGUMENTS:
            if argument in args and rng.random() < 0.5:
                args[argument] = _place_written_otherwise(args[argument], rng)
        calls.append({**call, "args": args})
    return {**record, "reference_tool_calls": calls}


def judged_samples(
    count: int, seed: int = 0, topics: int | None = None, reword: bool = False
) -> list[MultiTurnSample]:
    """:func:`judged_records` validated into samples (done before any timing); with
    ``reword``, their reference places written otherwise (:func:`reworded`)."""
    samples = []
    records = judged_records(count, seed, topics)
    if reword:
        records = [reworded(record, seed) for record in records]
    for index, record in enumerate(records):
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
    builders: Mapping[str, Callable[[OpenAIJudge], Metric]] = BUILDERS,
) -> dict[str, Any]:
    """Score ``samples`` with the metrics ``names`` through one fresh judge; what the
    run took, by the clock and by the server's counts."""
    return _run(server, samples, names, concurrency, cache, builders)[0]


def _run(
    server: Server,
    samples: Sequence[MultiTurnSample],
    names: Sequence[str],
    concurrency: int,
    cache: Path | None,
    builders: Mapping[str, Callable[[OpenAIJudge], Metric]] = BUILDERS,
) -> tuple[dict[str, Any], EvaluationResult]:
    """:func:`run_once`, and the run's result."""
    judge = OpenAIJudge(
        MODEL,
        base_url=server.url,
        api_key=PLACEHOLDER_KEY,
        max_concurrency=concurrency,
        cache=cache if cache is not None else False,
    )
    metrics = [builders[name](judge) for name in names]
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
    found = {
        "samples": count,
        "seconds": round(seconds, 4),
        "requests": requests,
        "by_kind": stats["by_kind"],
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
    return found, result


def _mean(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return round(sum(known) / len(known), 4) if known else None


def calls_per_sample(
    server: Server, count: int, groups: Sequence[str] = tuple(GROUPS)
) -> dict[str, Any]:
    """Each judged metric alone over ``count`` samples: server requests per sample
    (TopicAdherenceScore for 1, 5 and 20 reference topics; trajectory_judge with and
    without the reference; the criteria together, per criterion; the semantic rule per
    sample, as each score counts its requests)."""
    found: dict[str, Any] = {}
    if "topic_goal" in groups:
        found.update(_topic_goal_calls(server, count))
    if "trajectory_criteria_semantic" in groups:
        found.update(_new_calls(server, count))
    for name, entry in found.items():
        entry["target"] = TARGET_CALLS[name]
        entry["met"] = entry["max"] <= TARGET_CALLS[name] and not entry.get("failed_samples")
    return found


def _topic_goal_calls(server: Server, count: int) -> dict[str, Any]:
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
    return found


def _new_calls(server: Server, count: int) -> dict[str, Any]:
    """Issue 32's metrics, each alone (the criteria together): calls per sample."""
    samples = judged_samples(count, seed=3, reword=True)
    found: dict[str, Any] = {}
    variants = {
        "with reference": lambda judge: TrajectoryJudge(llm=judge),
        "without reference": lambda judge: TrajectoryJudge(llm=judge, use_reference=False),
    }
    trajectory: dict[str, Any] = {}
    failed = 0
    for label, build in variants.items():
        run = run_once(server, samples, ["trajectory_judge"], 64, None, {"trajectory_judge": build})
        trajectory[label] = run["requests_per_sample"]
        failed += run["failed_samples"]
    found["trajectory_judge"] = {
        "by_variant": trajectory,
        "max": max(trajectory.values()),
        "failed_samples": failed,
    }
    run = run_once(server, samples, list(CRITERIA), 64, None)
    per_criterion = run["requests"] / len(samples) / len(CRITERIA)
    found["criteria"] = {
        "label": f"criteria, per criterion ({len(CRITERIA)} side by side)",
        "criteria": len(CRITERIA),
        "requests_per_sample": run["requests_per_sample"],
        "max": round(per_criterion, 4),
        "failed_samples": run["failed_samples"],
    }
    run, result = _run(server, samples, [SEMANTIC], 64, None)
    asked = [row.scores[SEMANTIC].details["semantic"] for row in result.rows]
    requests = [entry["judge_requests"] for entry in asked]
    pairs = [len(entry["pairs"]) for entry in asked]
    with_pairs = [count for count in pairs if count]
    same = sum(pair["same"] for entry in asked for pair in entry["pairs"])
    found["semantic"] = {
        "label": "semantic argument rule (all of a sample's pairs in one call)",
        "spec": SEMANTIC_SPEC,
        "max": max(requests),
        "requests_per_sample": run["requests_per_sample"],
        "server_requests": run["requests"],
        "counted_requests": sum(requests),
        "samples": len(samples),
        "samples_with_pairs": len(with_pairs),
        "pairs": sum(pairs),
        "pairs_judged_same": same,
        "pairs_per_sample_with_pairs": {
            "mean": round(sum(with_pairs) / len(with_pairs), 2) if with_pairs else 0,
            "max": max(pairs),
        },
        "samples_with_several_pairs": sum(1 for count in pairs if count > 1),
        "failed_samples": run["failed_samples"],
    }
    return found


def throughput(
    server: Server,
    latency: float,
    sizes: dict[int, int],
    repeats: int,
    group: str = "topic_goal",
) -> list[dict[str, Any]]:
    """The metrics of ``group`` together at each concurrency (no cache), best of
    ``repeats`` runs, against the bound requests/s = concurrency / latency."""
    names = list(GROUPS[group])
    reword = group != "topic_goal"
    runs = []
    for concurrency, count in sizes.items():
        samples = judged_samples(count, seed=100 + concurrency, reword=reword)
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


def cached_rerun(
    server: Server, count: int, concurrency: int, group: str = "topic_goal"
) -> dict[str, Any]:
    """Fill a fresh cache file in a temporary folder, then score the same samples again
    with a new judge on that file: the rerun should send nothing."""
    names = list(GROUPS[group])
    samples = judged_samples(count, seed=7, reword=group != "topic_goal")
    with tempfile.TemporaryDirectory(prefix="tracegrade-bench-") as folder:
        path = Path(folder) / "judge.sqlite"
        first = run_once(server, samples, names, concurrency, path)
        second = run_once(server, samples, names, concurrency, path)
    return {
        "cache": "fresh file in a temporary folder (OpenAIJudge(cache=path))",
        "concurrency": concurrency,
        "metrics": names,
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
CALLS_PER_SAMPLE = {"topic_goal": 3.0, "trajectory_criteria_semantic": 4.9}
"""About how many requests a sample of each group makes together (issue 32's: one
trajectory, three criteria, and the semantic rule's one in the nine samples in ten that
meet pairs), to size the throughput runs."""


def _samples_for(rounds: int, concurrency: int, calls: float = 3.0) -> int:
    """Samples whose requests (``calls`` each) fill ``rounds`` rounds of ``concurrency``."""
    return math.ceil(rounds * concurrency / calls)


def _scale(rubric: Mapping[Any, str] | None) -> str:
    """How a criterion is graded, in words: ``pass/fail``, ``rubric 1/3/5``..."""
    if rubric is None:
        return "pass/fail"
    return "rubric " + "/".join(str(level) for level in rubric)


def run_judged(
    latency: float = 0.1,
    quick: bool = False,
    in_process: bool = False,
    groups: Sequence[str] = tuple(GROUPS),
) -> dict[str, Any]:
    """Every judged scenario of ``groups`` against a judge server with ``latency``
    seconds per reply; ``quick`` runs tiny sizes (a smoke test of a few seconds at
    latency 0.01)."""
    unknown = [group for group in groups if group not in GROUPS]
    if unknown:
        raise ValueError(f"unknown group(s) {unknown}; the groups are {list(GROUPS)}")
    sizes: dict[str, dict[int, int]]
    if quick:
        latency = min(latency, 0.01)
        sizes = {"topic_goal": {1: 3, 8: 16, 64: 32}}
        sizes["trajectory_criteria_semantic"] = {1: 2, 8: 8, 64: 16}
        per_metric, cache_count, repeats = 4, 12, 1
    else:
        sizes = {
            group: {
                concurrency: _samples_for(ROUNDS, concurrency, CALLS_PER_SAMPLE[group])
                for concurrency in (1, 8, 64)
            }
            for group in GROUPS
        }
        per_metric, cache_count, repeats = 64, 200, 3
    started = time.perf_counter()
    load_before = _load_average()
    server: Server = JudgeServer(latency) if in_process else JudgeServerProcess(latency)
    speed: dict[str, list[dict[str, Any]]] = {}
    cache: dict[str, dict[str, Any]] = {}
    with server:
        for group in groups:  # warm up
            samples = judged_samples(8, seed=999, reword=group != "topic_goal")
            run_once(server, samples, list(GROUPS[group]), 8, None)
        calls = calls_per_sample(server, per_metric, groups)
        for group in groups:
            speed[group] = throughput(server, latency, sizes[group], repeats, group)
            cache[group] = cached_rerun(server, cache_count, 64, group)
    found: dict[str, Any] = {
        "bench": "judged",
        "latency_s": latency,
        "server": "in-process thread" if in_process else "child process",
        "groups": list(groups),
        "group_metrics": {group: list(GROUPS[group]) for group in groups},
        "throughput_cache": "off (OpenAIJudge(cache=False))",
        "throughput_runs": "best of the repeats; every repeat's requests/s listed",
        "throughput_repeats": repeats,
        "throughput_rounds": ROUNDS if not quick else None,
        "bound": "requests/s <= in-flight limit / latency, the limit being the judge's "
        "max_concurrency = evaluate's concurrency; samples/s = that / calls per sample",
        "semantic_spec": SEMANTIC_SPEC,
        "criteria": {
            name: {"scale": _scale(options.get("rubric")), **options}
            for name, options in CRITERIA.items()
        },
        "calls_per_sample": calls,
        "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    if "topic_goal" in groups:  # the first group under the keys it has always had
        found["throughput_metrics"] = list(METRICS)
        found["throughput"] = speed["topic_goal"]
        found["cached_rerun"] = cache["topic_goal"]
    if "trajectory_criteria_semantic" in groups:
        found["new_throughput_metrics"] = list(NEW_METRICS)
        found["new_throughput"] = speed["trajectory_criteria_semantic"]
        found["new_cached_rerun"] = cache["trajectory_criteria_semantic"]
    found["targets"] = {
        "calls_per_sample": all(entry["met"] for entry in calls.values()),
        "throughput_within_10pct": {
            f"{group} {run['concurrency']}": run["within_10pct"]
            for group, runs in speed.items()
            for run in runs
        },
        "cached_rerun_zero_calls": all(entry["met"] for entry in cache.values()),
    }
    found["seconds"] = round(time.perf_counter() - started, 2)
    found["cpus"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    found["load_average"] = {"before": load_before, "after": _load_average()}
    return found


def _load_average() -> float | None:
    """The machine's one-minute load average (how busy it is beside this run), if known."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument(
        "--in-process", action="store_true", help="run the server in a thread of this process"
    )
    parser.add_argument(
        "--group",
        action="append",
        choices=list(GROUPS),
        help="measure only this group of judged metrics (again for more); all by default",
    )
    parser.add_argument(
        "--doc",
        type=Path,
        help="a benchmarks page to put the judged section and its targets rows in",
    )
    options = parser.parse_args()
    groups = options.group or list(GROUPS)
    if options.doc is not None and set(groups) != set(GROUPS):
        parser.error("--doc writes the whole judged section: measure every group for it")
    result = run_judged(options.latency, options.quick, options.in_process, groups)
    print(json.dumps(result))
    if options.doc is not None:
        from report import put_judged

        put_judged(options.doc, result)
        print(f"bench: wrote the judged section of {options.doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
