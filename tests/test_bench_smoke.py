"""The benchmark's quick mode, so bench/ cannot rot: it runs every scenario at tiny
sizes (no competitors) and writes a report. Nothing here is timed; only that the run
completes, the report has every section, and the tools agree on every value."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_quick_benchmark_writes_a_complete_report(tmp_path: Path) -> None:
    report = tmp_path / "benchmarks.md"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "run.py"),
            "--quick",
            "--out",
            str(report),
            "--work",
            str(tmp_path / "work"),
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    text = report.read_text()
    for heading in (
        "## Targets",
        "## End to end on a JSONL file",
        "## Python API",
        "## Import time",
        "## Judged metrics",
        "## Do the values agree?",
        "## The HTML report in a browser",
        "## On a Dask cluster",
        "## Behaviour metrics",
        "## Machine",
        "## How to reproduce",
    ):
        assert heading in text
    assert "| tracegrade CLI |" in text and "| pure-Python loop |" in text
    agreement = re.findall(r"\| ([\d,]+) of ([\d,]+) \|", text)
    assert len(agreement) >= 9
    assert all(same == total for same, total in agreement)
    assert "| a cached rerun makes 0 judge calls | 0 | met |" in text
    # the report of each size, loaded in a real browser: interactive after some time
    loads = re.findall(r"\| ([\d,]+) \| [\d,]+ MB \| [\d.]+ s \| [\d,]+ MB \| ([\d.]+) s \|", text)
    assert [size for size, _ in loads] == ["200", "1,000"]
    assert all(float(seconds) > 0 for _, seconds in loads)
    # one machine against a local Dask cluster, each size, every way of running
    dask = re.findall(r"\| ([\d,]+) \| (one machine, --workers \w+|Dask, --dask-local \d) \| "
                      r"([\d.]+) \| [\d,]+ \|", text)  # fmt: skip
    assert [(size, how) for size, how, _ in dask] == [
        (size, how)
        for size in ("200", "1,000")
        for how in (
            "one machine, --workers 1",
            "one machine, --workers auto",
            "Dask, --dask-local 1",
            "Dask, --dask-local 2",
        )
    ]
    assert all(float(seconds) > 0 for _, _, seconds in dask)
    # the behaviour metrics, each in one process, and the command line with and without them
    assert text.index("## Behaviour metrics") < text.index("## Machine")
    assert "| `tool_error_recovery` |" in text and "| classic three + behaviour |" in text
    # tracegrade serve: its section and its row of the targets table
    assert "## Live scoring (tracegrade serve)" in text
    assert "| `tracegrade serve` sustains ≥ 1,000 spans/s, memory bounded |" in text
    for label in ("| tracegrade |", "| tracegrade, with what a run uses |", "command line |"):
        assert label in text  # the import-time rows
    assert "`import tracegrade` (with evaluate and the tool-call metrics) < 0.3 s" in text
    # the Python API is timed beside the CLI with one worker, and judged against it
    api = re.search(
        r"\| Python API, load \+ evaluate ≤ 1.3x the CLI with 1 worker .*\| ([\d.]+)x \|", text
    )
    assert api is not None and float(api[1]) > 0
    assert re.search(r"\| Python API peak memory ≤ 2,995 MB .*\| [\d,]+ MB \| met \|", text)
    assert "| API / CLI, 1 worker |" in text
    if len(os.sched_getaffinity(0)) > 1:  # how far processes at once scale, measured
        found = re.search(r"\| (\d+) processes of a CPU-bound loop at once \| ([\d.]+)x", text)
        assert found is not None
        assert 0.5 < float(found[2]) <= int(found[1]) + 0.5


def test_the_new_judged_metrics_are_benchmarked_at_a_tiny_size(tmp_path: Path) -> None:
    """Issue 32's judged metrics (trajectory_judge, criteria, the semantic rule) in the
    judged benchmark: calls per sample, throughput and the cached rerun, written into a
    copy of the benchmarks page with the rest of the page left as it was."""
    page = tmp_path / "benchmarks.md"
    before = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    page.write_text(before, encoding="utf-8")
    command = [sys.executable, str(ROOT / "bench" / "judged.py"), "--quick", "--in-process"]
    finished = subprocess.run(
        [*command, "--doc", str(page)], check=True, timeout=60, capture_output=True, text=True
    )
    found = json.loads(finished.stdout.splitlines()[-1])
    calls = found["calls_per_sample"]
    assert calls["trajectory_judge"]["by_variant"] == {
        "with reference": 1.0,
        "without reference": 1.0,
    }
    assert calls["criteria"]["requests_per_sample"] == 3 and calls["criteria"]["max"] == 1
    semantic = calls["semantic"]
    assert semantic["max"] == 1 and semantic["samples_with_several_pairs"] >= 1
    assert semantic["server_requests"] == semantic["samples_with_pairs"]  # one per sample
    assert 0 < semantic["pairs_judged_same"] < semantic["pairs"]  # the stand-in tells them apart
    assert all(entry["met"] and not entry.get("failed_samples") for entry in calls.values())
    kinds = {"trajectory_with_reference", "criteria", "argument_equivalence"}
    for run in found["new_throughput"]:
        assert run["failed_samples"] == 0  # every answer fit its prompt's schema
        assert set(run["by_kind"]) == kinds and run["max_in_flight"] <= run["concurrency"]
    rerun = found["new_cached_rerun"]
    assert rerun["first"]["requests"] > 0 and rerun["rerun_requests"] == 0 and rerun["met"]
    assert rerun["same_scores"] and found["targets"]["cached_rerun_zero_calls"]
    text = page.read_text(encoding="utf-8")
    group = "trajectory_judge + 3 criteria + semantic rule"
    for row in (
        "| judge calls per sample, trajectory_judge ≤ 1 | 1 | met |",
        "| judge calls per sample, criteria, per criterion (3 side by side) ≤ 1 | 1 | met |",
        "| judge calls per sample, semantic argument rule (all of a sample's pairs in one "
        "call) ≤ 1 | 1 | met |",
        f"| a cached rerun makes 0 judge calls, {group} | 0 | met |",
        "| a cached rerun makes 0 judge calls | 0 | met |",
    ):
        assert row in text
    for concurrency in (1, 8, 64):
        assert f"| judged throughput ≥ 90% of the bound, concurrency {concurrency}, {group} |" in (
            text
        )
    assert text.count("| concurrency | samples | calls/sample |") == 2
    # the rest of the page as it was: only the judged rows and section differ
    judged_rows = ("| judged throughput ", "| judge calls per sample, ", "| a cached rerun ")
    judged_rows += ("<!-- judged:",)

    def outside(page_text: str) -> list[str]:
        head, _, rest = page_text.partition("## Judged metrics against a local judge")
        tail = rest[rest.index("## Do the values agree?") :]
        return [line for line in (head + tail).splitlines() if not line.startswith(judged_rows)]

    assert outside(text) == outside(before)
    page.write_text(text, encoding="utf-8")  # a second time: the section is replaced in place
    subprocess.run(
        [*command, "--doc", str(page)], check=True, timeout=60, capture_output=True, text=True
    )
    again = page.read_text(encoding="utf-8")
    assert again.count("## Judged metrics against a local judge") == 1
    assert outside(again) == outside(text) and len(again.splitlines()) == len(text.splitlines())


def test_the_stand_in_judge_tells_every_prompt_apart_without_a_schema() -> None:
    """In json_object and plain modes no schema names the prompt: the system text does."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import judge_server
    finally:
        sys.path.remove(str(ROOT / "bench"))
    folder = ROOT / "src" / "tracegrade" / "judge" / "prompts"
    for path in sorted(folder.glob("*.json")):
        prompt = json.loads(path.read_text(encoding="utf-8"))
        messages = [
            {"role": "system", "content": prompt["system"]},
            {"role": "user", "content": "Step 1. The user said: hello"},
        ]
        kind, answer = judge_server.answer_for({"messages": messages})
        assert kind == prompt["name"] and answer is not None
        assert set(answer) == set(prompt["schema"]["required"])


def test_generator_is_seeded_and_realistic(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from generate import conversations
    finally:
        sys.path.pop(0)
    first = list(conversations(50, seed=4))
    assert first == list(conversations(50, seed=4))
    assert first != list(conversations(50, seed=5))
    for record in first:
        humans = [m for m in record["user_input"] if m["type"] == "human"]
        assert 2 <= len(humans) <= 6
        for message in record["user_input"]:
            if message["type"] == "ai" and "tool_calls" in message:
                assert 1 <= len(message["tool_calls"]) <= 3
    predicted = [
        (c["name"], repr(c["args"]))
        for r in first
        for m in r["user_input"]
        for c in m.get("tool_calls", ())
    ]
    reference = [(c["name"], repr(c["args"])) for r in first for c in r["reference_tool_calls"]]
    shared = set(predicted) & set(reference)
    assert 0.3 * len(set(reference)) < len(shared) < len(set(reference))
    assert any(isinstance(v, dict) for _, a in predicted for v in eval(a).values())
    assert any(isinstance(v, list) for _, a in predicted for v in eval(a).values())


def _plain(record: dict[str, Any]) -> dict[str, Any]:
    """A behaviour conversation with what the variant adds taken away: its added steps
    (calls not named ``call_T_S_P``) and their results, the added fields, and the
    content of failed calls' results (which say what failed)."""
    added = re.compile(r"(?!call_\d+_\d+_\d+$)")
    kept = []
    for message in record["user_input"]:
        calls = message.get("tool_calls") or []
        if any(added.match(call["id"]) for call in calls):
            assert all(added.match(call["id"]) for call in calls)  # never mixed
            continue
        if message["type"] == "tool" and added.match(message["tool_call_id"]):
            continue
        message = {k: v for k, v in message.items() if k not in ("usage", "timing", "metadata")}
        if message.pop("outcome", {"status": "ok"})["status"] == "error":
            message["content"] = None
        kept.append(message)
    plain = {k: v for k, v in record.items() if k != "reference_handoffs"}
    return {**plain, "user_input": kept}


def test_the_behaviour_variant_only_adds_to_the_plain_conversations(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from generate import conversations, write_jsonl
    finally:
        sys.path.pop(0)
    plain = list(conversations(300, seed=3))
    assert plain == list(conversations(300, seed=3, behaviour=False))
    varied = list(conversations(300, seed=3, behaviour=True))
    assert varied == list(conversations(300, seed=3, behaviour=True))  # seeded too
    for record, base in zip(varied, plain, strict=True):
        failed = [
            i
            for i, m in enumerate(_plain(record)["user_input"])
            if m["content"] is None  # a failed call's result
        ]
        expected = [
            {**m, "content": None} if i in failed else m for i, m in enumerate(base["user_input"])
        ]
        assert _plain(record) == {**base, "user_input": expected}
    # what the behaviour metrics read is there, and valid for the model
    path = write_jsonl(tmp_path / "behaviour.jsonl", 300, seed=3, behaviour=True)
    from tracegrade import iter_jsonl

    samples = list(iter_jsonl(path))
    assert len(samples) == 300 and all(s.reference_handoffs is not None for s in samples)
    messages = [m for s in samples for m in s.user_input]
    assert all(m.usage and m.timing and m.usage.model for m in messages if m.type == "ai")
    outcomes = [m.outcome.status.value for m in messages if m.type == "tool" and m.outcome]
    assert 0.01 < outcomes.count("error") / len(outcomes) < 0.1
    handoffs = [c for m in messages if m.type == "ai" for c in m.tool_calls or ()
                if c.type is not None and c.type.value == "HANDOFF"]  # fmt: skip
    assert handoffs and all(c.target_agent for c in handoffs)


def test_the_behaviour_benchmark_runs_at_a_tiny_size(tmp_path: Path) -> None:
    finished = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "behaviour.py"), "--size", "100",
         "--repetitions", "1", "--work", str(tmp_path)],
        check=True, timeout=60, capture_output=True, text=True,
    )  # fmt: skip
    rows = re.findall(r"^\| `([\w:=.]+)` \| ([\d,]+) \| [\d.]+ \| [\d,]+ \|", finished.stdout, re.M)
    assert [name.split(":")[0] for name, _ in rows] == [
        "tool_call_f1",
        "tool_error_recovery",
        "tool_call_efficiency",
        "token_budget",
        "latency_budget",
        "cost_budget",
        "handoff_match",
    ]
    assert all(0 < int(applied) <= 100 for _, applied in rows)
    assert "| classic three |" in finished.stdout
    assert "| classic three + behaviour |" in finished.stdout


def test_the_serve_benchmark_runs_at_a_tiny_size(tmp_path: Path) -> None:
    finished = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "serve.py"), "--sizes", "20", "40",
         "--rates", "0", "2000", "--per-request", "5", "--senders", "2",
         "--work", str(tmp_path)],
        check=True, timeout=60, capture_output=True, text=True,
    )  # fmt: skip
    rows = re.findall(r"^\| (as fast as answered|2,000 spans/s) \| (\d+) \| (\d+) \|",
                      finished.stdout, re.M)  # fmt: skip
    assert rows == [
        ("as fast as answered", "20", "200"),
        ("as fast as answered", "40", "400"),
        ("2,000 spans/s", "20", "200"),
        ("2,000 spans/s", "40", "400"),
    ]
    assert "`tracegrade serve` sustains ≥ 1,000 spans/s" in finished.stdout
    found = json.loads((tmp_path / "serve.json").read_text())
    assert all(run["exit"] == 143 and run["late_spans"] == 0 for run in found["runs"])
    # the section and the targets row go into a page, the rest of it as it was
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import serve
    finally:
        sys.path.remove(str(ROOT / "bench"))
    page = tmp_path / "benchmarks.md"
    before = (
        "# B\n\n## Targets\n\n| target | measured | verdict |\n|---|---|---|\n| a | 1 | met |\n"
    )
    page.write_text(before + "\n## Other\n\ntext\n\n## Machine\n\nm\n")
    for _ in range(2):  # a second run replaces the first
        serve.replace_section(page, serve.MARKERS, serve.markdown(found))
        serve.put_target(page, found)
    text = page.read_text()
    assert text.count(serve.MARKERS[0]) == 1 and text.count(serve.TARGET_ROW) == 1
    assert text.index("| a | 1 | met |") < text.index(serve.TARGET_ROW) < text.index("## Other")
    assert text.index("## Other") < text.index(serve.MARKERS[0]) < text.index("## Machine")


def test_the_memory_sampler_counts_the_whole_process_tree() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import measure
    finally:
        sys.path.remove(str(ROOT / "bench"))
    # a child that starts a grandchild holding 64 MB, then waits for it
    script = (
        "import subprocess, sys\n"
        'holder = \'b = bytearray(64 << 20); import sys; sys.stdout.write("ready\\\\n"); '
        "sys.stdout.flush(); sys.stdin.read()'\n"
        "child = subprocess.Popen([sys.executable, '-c', holder], stdin=subprocess.PIPE, "
        "stdout=subprocess.PIPE, text=True)\n"
        "child.stdout.readline()\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
        "child.stdin.close(); child.wait()\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline() == "ready\n"
        own = measure._rss_kb(parent.pid)
        whole = measure.tree_rss_kb(parent.pid)
        assert whole >= own + 64 * 1024
        if measure._CHILDREN_FILES:  # the light walk and the full scan agree
            measure._CHILDREN_FILES = False
            try:
                scanned = measure.tree_rss_kb(parent.pid)
            finally:
                measure._CHILDREN_FILES = True
            assert abs(scanned - whole) < 4096
    finally:
        assert parent.stdin is not None
        parent.stdin.close()
        parent.wait(30)


def test_a_measured_peak_is_the_commands_own_not_the_benchmarks() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import measure
    finally:
        sys.path.remove(str(ROOT / "bench"))
    if not measure.PROC.is_dir():
        pytest.skip("the peak is read from /proc")
    held = b"x" * (256 << 20)  # this process grows well past what the commands use
    try:
        # a brief 96 MB spike, let go long before the command ends
        spike = "b = b'x' * (96 << 20); del b; import time; time.sleep(0.3)"
        spiked = measure.run([sys.executable, "-c", spike])
        quiet = measure.run([sys.executable, "-c", "import time; time.sleep(0.3)"])
    finally:
        del held
    assert (spiked.returncode, quiet.returncode) == (0, 0)
    assert 96 <= spiked.peak_rss_mb < 200
    assert quiet.peak_rss_mb < 64


def test_each_worker_process_peak_is_its_own() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import dask_load
        import measure
    finally:
        sys.path.remove(str(ROOT / "bench"))
    if not measure.PROC.is_dir():
        pytest.skip("the peaks are read from /proc")
    # a parent of 96 MB at its peak, a worker of 64 MB and a smaller one, one after the other
    holder = "b = bytearray({size} << 20); import time; time.sleep(0.4)"
    script = (
        "import subprocess, sys\n"
        "b = bytearray(96 << 20); del b\n"
        f"subprocess.run([sys.executable, '-c', {holder.format(size=64)!r}])\n"
        f"subprocess.run([sys.executable, '-c', {holder.format(size=8)!r}])\n"
    )
    measured = measure.run([sys.executable, "-c", script])
    assert measured.returncode == 0 and measured.cpu_seconds > 0
    top, *children = measured.processes
    assert top.parent is None and 96 <= top.peak_mb < 160
    assert [child.parent for child in children] == [top.pid, top.pid]
    assert 64 <= children[0].peak_mb < 96 and children[1].peak_mb < 48
    worker, own = dask_load.worker_peak_mb(measured)
    assert (worker, own) == (children[0].peak_mb, top.peak_mb)
    alone = measure.run([sys.executable, "-c", holder.format(size=32)])
    assert dask_load.worker_peak_mb(alone) == (alone.processes[0].peak_mb,) * 2


def _bench_report() -> ModuleType:
    """bench/report.py, loaded from its file (``report`` on the path may be another
    module: the tests of tracegrade.report are the package ``report``)."""
    sys.path.insert(0, str(ROOT / "bench"))  # for its own imports
    try:
        spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_report"] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return module


def test_a_missed_loop_target_is_set_beside_how_far_processes_scale() -> None:
    report = _bench_report()
    runs = {report.TRACEGRADE: SimpleNamespace(peak_mb=90.0)}

    def targets(ratio: float, scaling: tuple[int, float] | None) -> str:
        sizes = {10_000: (runs, {report.PURE: ratio})}
        made = report.Report({"cpu": "x"}, sizes=sizes, scaling=scaling)
        return "\n".join(made._targets())

    assert "get 1.90x the work of one done" in targets(1.7, (2, 1.9))
    assert "at most 0.95 times the loop's" in targets(1.7, (2, 1.9))
    assert "at most 3.80 times the loop's" in targets(1.7, (8, 7.6))  # the bound is scaling / 2
    assert "CPU-bound" not in targets(2.1, (2, 1.9))  # met: nothing to explain
    assert "CPU-bound" not in targets(1.7, None)  # one CPU: nothing measured


def test_a_missed_target_never_reads_as_met() -> None:
    report = _bench_report()
    assert report._times(1.995, 2, 2) == "1.995x"  # not "2.00x"
    assert report._reaches(1.995, 2) == "(reaches 99.8% of it)"  # not "100%"
    assert report._times(2.004, 2, 2) == "2.00x"  # met: rounding down is fine
    assert report._times(48.66, 50, 1) == "48.7x"
    assert report._reaches(48.66, 50) == "(reaches 97% of it)"
