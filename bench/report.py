"""The benchmark's markdown report: targets first, then every measurement behind them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure import SAMPLE_SECONDS

TRACEGRADE = "tracegrade CLI"
PURE = "pure-Python loop"
RAGAS = "ragas evaluate"


API_OVER_ONE_WORKER = 1.3
"""The Python API (load + evaluate) takes at most this many times the CLI with one worker
on the same file."""
API_PEAK_MB = 2995
"""The Python API's peak memory target: two thirds of the 4,493 MB it took before the
model became msgspec Structs (issue 18)."""

IMPORT_TARGET = "tracegrade, with what a run uses"
"""The import-time row that the < 0.3 s target reads."""


def _rate(value: float) -> str:
    return f"{value:,.0f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _verdict(met: bool, shortfall: str = "") -> str:
    return "met" if met else f"**missed** {shortfall}".rstrip()


def _times(ratio: float, target: float, digits: int) -> str:
    """``ratio`` as ``1.23x``, with more decimals where a miss would round to the target."""
    while ratio < target and f"{ratio:.{digits}f}" == f"{target:.{digits}f}" and digits < 6:
        digits += 1
    return f"{ratio:.{digits}f}x"


def _reaches(ratio: float, target: float) -> str:
    """How much of the target a missed ratio reaches, never shown as 100%."""
    share = ratio / target
    digits = 0
    while float(f"{share * 100:.{digits}f}") >= 100 and digits < 4:
        digits += 1
    return f"(reaches {share:.{digits}%} of it)"


@dataclass
class Report:
    """What the run measured; :meth:`markdown` writes it up."""

    machine: dict[str, str]
    quick: bool = False
    imports: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    sizes: dict[int, tuple[dict[str, Any], dict[str, float]]] = field(default_factory=dict)
    agreement: dict[int, dict[str, dict[str, tuple[int, int]]]] = field(default_factory=dict)
    api: tuple[int, dict[str, Any]] | None = None
    judged: dict[str, Any] = field(default_factory=dict)
    report_load: dict[str, Any] = field(default_factory=dict)
    """How the HTML report loads in a browser (see bench/report_load.py)."""
    dask_load: dict[str, Any] = field(default_factory=dict)
    """One machine against a local Dask cluster (see bench/dask_load.py)."""
    behaviour: dict[str, Any] = field(default_factory=dict)
    """The behaviour metrics' throughput (see bench/behaviour.py)."""
    serve: dict[str, Any] = field(default_factory=dict)
    """``tracegrade serve``'s throughput and memory (see bench/serve.py)."""
    scaling: tuple[int, float] | None = None
    """(CPUs, how many times one process's work that many processes get done at once)."""
    seconds: float = 0.0
    when: str = ""

    def markdown(self) -> str:
        lines = [
            "# Benchmarks",
            "",
            "Made by `scripts/run-bench` (see [How to reproduce](#how-to-reproduce)); "
            f"{self.when}, in {self.seconds / 60:.0f} minutes.",
            "",
        ]
        if self.quick:
            lines += ["**Quick run**: tiny sizes and no competitors; not a measurement.", ""]
        lines += self._targets() + self._end_to_end() + self._api() + self._imports()
        lines += self._judged() + self._agreement() + self._report_load() + self._dask_load()
        lines += self._behaviour() + self._serve()
        lines += self._machine() + self._method()
        return "\n".join(lines)

    def _report_load(self) -> list[str]:
        if not self.report_load:
            return []
        from report_load import markdown

        return [*markdown(self.report_load), ""]

    def _dask_load(self) -> list[str]:
        if not self.dask_load:
            return []
        from dask_load import markdown

        return [*markdown(self.dask_load), ""]

    def _behaviour(self) -> list[str]:
        if not self.behaviour:
            return []
        from behaviour import markdown

        return [*markdown(self.behaviour), ""]

    def _serve(self) -> list[str]:
        if not self.serve:
            return []
        from serve import markdown

        return [*markdown(self.serve), ""]

    def _targets(self) -> list[str]:
        rows = []
        largest = max(self.sizes) if self.sizes else 0
        for size, (_runs, ratios) in sorted(self.sizes.items()):
            if RAGAS in ratios:
                ratio = ratios[RAGAS]
                rows.append(
                    [
                        f"end to end ≥ 50x `ragas.evaluate` ({size:,} conversations)",
                        _times(ratio, 50, 1),
                        _verdict(ratio >= 50, _reaches(ratio, 50)),
                    ]
                )
            if PURE in ratios:
                ratio = ratios[PURE]
                rows.append(
                    [
                        f"end to end ≥ 2x the pure-Python loop ({size:,})",
                        _times(ratio, 2, 2),
                        _verdict(ratio >= 2, _reaches(ratio, 2)),
                    ]
                )
        if largest:
            peak = self.sizes[largest][0][TRACEGRADE].peak_mb
            rows.append(
                [
                    f"peak memory for {largest:,} conversations < 250 MB",
                    f"{peak:.0f} MB",
                    _verdict(
                        peak < 250 and largest >= 1_000_000,
                        "" if peak < 250 else f"by {peak - 250:.0f} MB",
                    ),
                ]
            )
            if largest < 1_000_000:
                rows[-1][2] = "not measured at 1M in this run"
        rows += self._api_targets()
        seconds = self.imports.get(IMPORT_TARGET)
        if seconds is not None:
            rows.append(
                [
                    "`import tracegrade` (with evaluate and the tool-call metrics) < 0.3 s",
                    f"{seconds:.3f} s",
                    _verdict(seconds < 0.3, f"by {seconds - 0.3:.3f} s"),
                ]
            )
        rows += judged_target_rows(self.judged)
        if self.serve:
            from serve import target_cells

            rows.append(target_cells(self.serve))
        lines = ["## Targets", "", *_table(["target", "measured", "verdict"], rows)]
        missed = any(ratios[PURE] < 2 for _runs, ratios in self.sizes.values() if PURE in ratios)
        if missed and self.scaling is not None:
            cpus, measured = self.scaling
            scaling = round(measured, 2)  # the bound follows from the figure shown
            lines += [
                f"The pure-Python loop runs in one process, tracegrade in one per CPU. On "
                f"this machine {cpus} processes of a CPU-bound Python loop get "
                f"{scaling:.2f}x the work of one done (see Machine), so beating the loop by "
                "2x takes tracegrade's CPU time per conversation, checks and explanations "
                f"included, to be at most {scaling / 2:.2f} times the loop's; start-up and "
                "the end of the run weigh most at the smallest size.",
                "",
            ]
        return lines

    def _end_to_end(self) -> list[str]:
        lines = [
            "## End to end on a JSONL file",
            "",
            "tool_call_f1 + tool_call_accuracy + tool_correctness (or the competitor's "
            "equivalents) over the same generated conversations, from process start to "
            "the last result line written: each tool reads the file, scores every "
            "conversation and writes one JSON line per conversation. `tracegrade CLI` is "
            "`tracegrade evaluate --workers auto` (one process per CPU on files of 1 MiB "
            "and more); peak memory is the whole process tree's, sampled every "
            f"{SAMPLE_SECONDS * 1000:.0f} ms during the timed runs (sparingly: sampling "
            "takes CPU that a command using every CPU would miss).",
            "",
        ]
        for size, (runs, ratios) in sorted(self.sizes.items()):
            count = len(next(iter(runs.values())).measured)
            lines += [f"### {size:,} conversations ({count} repetition(s), medians)", ""]
            rows = []
            for label, found in runs.items():
                ratio = "" if label == TRACEGRADE else f"{ratios[label]:.2f}x"
                start = found.import_seconds
                rows.append(
                    [
                        label,
                        f"{found.seconds:.2f}",
                        _rate(found.per_second),
                        f"{found.peak_mb:.0f}",
                        ratio,
                        "" if start is None else f"{start:.2f}",
                    ]
                )
            lines += _table(
                [
                    "tool",
                    "seconds",
                    "conversations/s",
                    "peak MB",
                    "tracegrade is faster by",
                    "import s",
                ],
                rows,
            )
        return lines

    def _api_targets(self) -> list[list[str]]:
        if self.api is None:
            return []
        size, found = self.api
        rows = []
        ratio = found.get("over_cli_one_worker")
        if ratio is not None:
            rows.append(
                [
                    f"Python API, load + evaluate ≤ {API_OVER_ONE_WORKER}x the CLI with 1 "
                    f"worker ({size:,})",
                    f"{ratio:.2f}x",
                    _verdict(
                        ratio <= API_OVER_ONE_WORKER, f"by {ratio - API_OVER_ONE_WORKER:.2f}x"
                    ),
                ]
            )
        peak = found["peak_rss_mb"]
        rows.append(
            [
                f"Python API peak memory ≤ {API_PEAK_MB:,} MB ({size:,})",
                f"{peak:,.0f} MB",
                _verdict(peak <= API_PEAK_MB, f"by {peak - API_PEAK_MB:,.0f} MB"),
            ]
        )
        return rows

    def _api(self) -> list[str]:
        if self.api is None:
            return []
        size, found = self.api
        header = ["samples", "load s", "evaluate s", "load + evaluate s", "samples/s", "peak MB"]
        row = [
            f"{found['records']:,}",
            f"{found['load_seconds']:.2f}",
            f"{found['seconds']:.2f}",
            f"{found['total_seconds']:.2f}",
            _rate(found["records"] / found["total_seconds"]),
            f"{found['peak_rss_mb']:.0f}",
        ]
        if "over_cli_one_worker" in found:
            header += ["CLI, 1 worker s", "API / CLI, 1 worker"]
            row += [
                f"{found['cli_one_worker_seconds']:.2f}",
                f"{found['over_cli_one_worker']:.2f}x",
            ]
        return [
            "## Python API, samples in memory",
            "",
            "`EvaluationDataset.from_jsonl(path).load()` then "
            "`evaluate(samples, [ToolCallF1(), ToolCallAccuracy(), ToolCorrectnessMetric()])` "
            f"over {size:,} samples in one process, every row kept in memory with its reason "
            f"and details; run {found['repetitions']} times beside the CLI rows of that size "
            "(medians). The ratio is the median over repetitions of the API's load + evaluate "
            "against the whole run of `tracegrade evaluate --workers 1` on the same file, "
            "which reads, scores and writes every row:",
            "",
            *_table(header, [row]),
        ]

    def _imports(self) -> list[str]:
        rows = [
            [name + (f" {self.versions[name]}" if name in self.versions else ""), f"{sec:.3f}"]
            for name, sec in self.imports.items()
        ]
        return [
            "## Import time",
            "",
            "Median seconds to import in a fresh interpreter (bytecode compiled, as an "
            "installed package is). tracegrade loads its parts on first use, so it is also "
            "timed with `from tracegrade import evaluate, ToolCallF1, ToolCallAccuracy, "
            "ToolCorrectnessMetric`, and as the command line (`import tracegrade.cli`); the "
            "others are `import ragas` and `import deepeval`:",
            "",
            *_table(["package", "seconds"], rows),
        ]

    def _judged(self) -> list[str]:
        return judged_section(self.judged)

    def _agreement(self) -> list[str]:
        rows = []
        for size, tools in sorted(self.agreement.items()):
            for tool, metrics in tools.items():
                for name, (same, total) in metrics.items():
                    rows.append([f"{size:,}", tool, name, f"{same:,} of {total:,}"])
        if not rows:
            return []
        return [
            "## Do the values agree?",
            "",
            "Per metric, the conversations on which the tool's value equals tracegrade's "
            "(to 1e-6). Where they differ, docs/semantics.md says why.",
            "",
            *_table(["size", "tool", "metric", "same value"], rows),
        ]

    def _machine(self) -> list[str]:
        rows = [[key, value] for key, value in self.machine.items()]
        if self.scaling is not None:
            cpus, scaling = self.scaling
            rows.append(
                [f"{cpus} processes of a CPU-bound loop at once", f"{scaling:.2f}x one's work"]
            )
        rows += [[f"{name} version", version] for name, version in self.versions.items()]
        return ["## Machine", "", *_table(["", ""], rows)]

    @staticmethod
    def _method() -> list[str]:
        return [
            "## How to reproduce",
            "",
            "```bash",
            "scripts/run-bench            # everything; writes docs/benchmarks.md",
            "scripts/run-bench --quick    # a smoke run with tiny sizes and no competitors",
            "```",
            "",
            "The data is made by `bench/generate.py` (seed 0): 2-6 turns per conversation, "
            "1-3 tool calls per AI message from ten tools with nested and list arguments, "
            "and reference calls that keep, change, drop, add and swap some of the "
            "agent's calls. ragas and deepeval are installed from PyPI into "
            "`bench/.venvs/` at the versions pinned in `bench/competitors/`; the "
            "pure-Python loop (`bench/pure_loop.py`) is the standard library's `json` and "
            "a plain computation of the same three values, with no validation and no "
            "explanations: a lower bound for any tool that reads and writes JSON in Python.",
            "",
            "Tools run one after another on the same file in a rotating order, several "
            "times; each figure is the median, and each ratio is the median of the ratios "
            "of side-by-side runs. Wall time includes starting the interpreter and "
            "importing the tool (the `import s` column shows the competitors' share of "
            "it, which they report themselves).",
            "",
        ]


JUDGED_MARKERS = ("<!-- judged:start -->", "<!-- judged:end -->")
JUDGED_HEADING = "## Judged metrics against a local judge"
JUDGED_ROWS = ("| judged throughput ", "| judge calls per sample, ", "| a cached rerun makes 0 ")
"""How the judged rows of the targets table begin (:func:`put_judged` replaces them)."""
NEW_GROUP = "trajectory_judge + 3 criteria + semantic rule"


def judged_target_rows(judged: dict[str, Any]) -> list[list[str]]:
    """The targets table's rows of the judged benchmark (bench/judged.py's result)."""
    if not judged:
        return []
    rows = []
    throughput = [(run, "") for run in judged.get("throughput", ())]
    throughput += [(run, f", {NEW_GROUP}") for run in judged.get("new_throughput", ())]
    for run, group in throughput:
        share = run["measured_over_bound"]
        rows.append(
            [
                f"judged throughput ≥ 90% of the bound, concurrency {run['concurrency']}{group}",
                f"{share:.1%} of the bound",
                _verdict(share >= 0.9),
            ]
        )
    for name, entry in judged["calls_per_sample"].items():
        rows.append(
            [
                f"judge calls per sample, {entry.get('label', name)} ≤ {entry['target']}",
                f"{entry['max']:g}",
                _verdict(entry["met"]),
            ]
        )
    reruns = [(judged.get("cached_rerun"), ""), (judged.get("new_cached_rerun"), f", {NEW_GROUP}")]
    for cache, group in reruns:
        if cache:
            rows.append(
                [
                    f"a cached rerun makes 0 judge calls{group}",
                    str(cache["rerun_requests"]),
                    _verdict(cache["met"]),
                ]
            )
    return rows


def _throughput_table(runs: list[dict[str, Any]]) -> list[str]:
    rows = [
        [
            str(run["concurrency"]),
            str(run["samples"]),
            f"{run['requests_per_sample']:g}",
            f"{run['requests_per_s']:.1f}",
            f"{run['bound_requests_per_s']:.1f}",
            f"{run['measured_over_bound']:.1%}",
            str(run["max_in_flight"]),
            _optional(run.get("client_cpu_ms_per_request"), "{:.2f}"),
            ", ".join(
                f"{each / run['bound_requests_per_s']:.1%}"
                for each in run.get("repeats_requests_per_s", ())
            ),
        ]
        for run in runs
    ]
    return _table(
        [
            "concurrency",
            "samples",
            "calls/sample",
            "requests/s",
            "bound",
            "share of bound",
            "max in flight at the server",
            "client CPU ms/request",
            "every run's share",
        ],
        rows,
    )


def _cache_line(cache: dict[str, Any], what: str) -> str:
    return (
        f"Cached rerun{what} ({cache['cache']}): the first run made "
        f"{cache['first']['requests']} requests for {cache['first']['samples']} samples, the "
        f"rerun {cache['rerun_requests']} ({cache['rerun']['samples_per_s']:.0f} samples/s); "
        f"same scores: {'yes' if cache['same_scores'] else 'no'}."
    )


def judged_section(judged: dict[str, Any]) -> list[str]:
    """The judged section of the page, within :data:`JUDGED_MARKERS`."""
    if not judged:
        return []
    lines = [JUDGED_MARKERS[0], JUDGED_HEADING, ""]
    if judged.get("alone"):
        lines += [
            f"Measured {judged['when']} by `bench/judged.py --doc` on its own, in "
            f"{judged['seconds']:.0f} s (the rest of the page by the run above)"
            + _load_note(judged)
            + ".",
            "",
        ]
    lines += [
        "An OpenAI-compatible server on 127.0.0.1 (bench/judge_server.py, which answers "
        "each judge prompt in its schema) replying to every request after "
        f"{judged['latency_s'] * 1000:.0f} ms; {judged['bound']}.",
        "",
    ]
    notes = _rounds_note(judged.get("throughput_rounds")) + _repeats_note(
        judged.get("throughput_repeats")
    )
    calls = judged["calls_per_sample"]
    if "throughput" in judged:
        lines += [
            f"Throughput runs use {', '.join(judged['throughput_metrics'])} together, cache "
            f"{judged['throughput_cache']}." + notes,
            "",
            *_throughput_table(judged["throughput"]),
        ]
        topic = calls["topic_adherence"]["by_topic_count"]
        first = ("agent_goal_accuracy_with_reference", "agent_goal_accuracy_without_reference")
        lines += [
            "Judge calls per sample, each metric alone: topic_adherence "
            + ", ".join(f"{v:g} with {k} topic(s)" for k, v in topic.items())
            + "; "
            + "; ".join(f"{n} {calls[n]['max']:g}" for n in first if n in calls)
            + ".",
            "",
            _cache_line(judged["cached_rerun"], ""),
            "",
        ]
    if "new_throughput" in judged:
        lines += _new_judged(judged, notes)
    return [*lines[:-1], JUDGED_MARKERS[1], ""]


def _new_judged(judged: dict[str, Any], notes: str) -> list[str]:
    """Issue 32's judged metrics: their throughput, calls per sample and cached rerun."""
    calls = judged["calls_per_sample"]
    criteria = judged["criteria"]
    scales = ", ".join(f"{name} ({entry['scale']})" for name, entry in criteria.items())
    lines = [
        f"Issue 32's judged metrics together ({NEW_GROUP}): trajectory_judge, the criteria "
        f"{scales}, each under its own name, and `{judged['semantic_spec']}` (run as "
        "tool_call_f1_semantic), on the same generated conversations with about half of "
        "the reference calls' city, origin and destination written another way (a city "
        "as its airport's code, a code as its city...); cache "
        f"{judged['throughput_cache']}." + notes,
        "",
        *_throughput_table(judged["new_throughput"]),
    ]
    parts = []
    trajectory = calls.get("trajectory_judge")
    if trajectory:
        parts.append(
            "trajectory_judge "
            + ", ".join(f"{v:g} {k}" for k, v in trajectory["by_variant"].items())
        )
    entry = calls.get("criteria")
    if entry:
        parts.append(
            f"criteria {entry['requests_per_sample']:g} for {entry['criteria']} criteria, "
            f"{entry['max']:g} per criterion"
        )
    entry = calls.get("semantic")
    if entry:
        pairs = entry["pairs_per_sample_with_pairs"]
        parts.append(
            f"the semantic rule {entry['requests_per_sample']:g} on average and at most "
            f"{entry['max']:g} in any sample: {entry['samples_with_pairs']} of "
            f"{entry['samples']} samples met pairs ({pairs['mean']:.1f} on average, up to "
            f"{pairs['max']}; {entry['samples_with_several_pairs']} samples more than one), "
            f"each sample's pairs in one request, {entry['server_requests']} requests in all "
            f"({entry['pairs_judged_same']} of {entry['pairs']} pairs judged the same)"
        )
    lines += [
        "Judge calls per sample, each alone (the criteria side by side): " + "; ".join(parts) + ".",
        "",
        _cache_line(judged["new_cached_rerun"], f", {NEW_GROUP}"),
        "",
    ]
    return lines


def put_judged(document: Path, judged: dict[str, Any]) -> None:
    """Put the judged section and the judged rows of the targets table into
    ``document`` in place of those there (a section without markers is found by its
    heading), the rest of the page as it was."""
    judged = {**judged, "alone": True}
    text = document.read_text(encoding="utf-8")
    block = "\n".join(judged_section(judged))
    start, end = JUDGED_MARKERS
    if start in text and end in text:
        head, _, rest = text.partition(start)
        _, _, tail = rest.partition(end + "\n")
        text = head + block + tail
    elif JUDGED_HEADING in text:  # a page made before the section had markers
        head, _, rest = text.partition(JUDGED_HEADING)
        at = rest.find("\n## ")
        at2 = rest.find("\n<!-- ")
        stops = [where for where in (at, at2) if where >= 0]
        tail = rest[min(stops) + 1 :] if stops else ""
        text = head + block + "\n" + tail
    else:
        raise ValueError(f"{document} has no judged section to replace")
    rows = ["| " + " | ".join(row) + " |" for row in judged_target_rows(judged)]
    lines = text.split("\n")
    kept: list[str] = []
    placed = False
    for line in lines:
        if line.startswith(JUDGED_ROWS):
            if not placed:
                kept += rows
                placed = True
            continue
        kept.append(line)
    if not placed:
        raise ValueError(f"{document} has no judged rows in its targets table")
    document.write_text("\n".join(kept), encoding="utf-8")


def _load_note(judged: dict[str, Any]) -> str:
    """The machine's load beside the run, when known: other work on its CPUs slows the
    client and the server, most at the highest concurrency."""
    load, cpus = judged.get("load_average") or {}, judged.get("cpus")
    if load.get("before") is None or load.get("after") is None or not cpus:
        return ""
    return (
        f", on {cpus} CPUs shared with other work (load average {load['before']:.1f} at "
        f"the start, {load['after']:.1f} at the end)"
    )


def _rounds_note(rounds: int | None) -> str:
    if not rounds:
        return ""
    return (
        f" Each throughput run sends {rounds} x concurrency requests, about {rounds} "
        "latencies at full pipeline, so filling and draining it at the ends weigh ~1%."
    )


def _repeats_note(repeats: int | None) -> str:
    if not repeats or repeats < 2:
        return ""
    return (
        f" Each row is the best of {repeats} runs (a busy machine only ever slows a run "
        "down); the last column has every run's share of the bound."
    )


def _optional(value: float | None, form: str) -> str:
    return "" if value is None else form.format(value)
