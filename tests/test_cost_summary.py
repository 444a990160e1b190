"""Cost and time against success: the distributions per conversation of tokens, cost and
agent time (hand-worked percentiles), the split by speaking agent, the block against a
success metric, the gates on mean cost and p90 agent time, and how the console and the
HTML report show them; the same numbers from worker processes and after a resume."""

from __future__ import annotations

import json
from array import array
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

# autouse: each test in a fresh working directory, with wide plain output
from tests.test_cli_run import workdir  # noqa: F401
from tests.usage_records import usage_record

from tracegrade import ToolCallF1, evaluate
from tracegrade.cli import main
from tracegrade.io.store import run_record_path
from tracegrade.metrics.base import Metric
from tracegrade.model.agent_usage import AgentUsage, agent_usage_of
from tracegrade.model.samples import MultiTurnSample
from tracegrade.run.agent_usage import Distribution, percentile
from tracegrade.run.results import SummaryAccumulator
from tracegrade.run.workers import score_file

pytestmark = pytest.mark.filterwarnings("ignore::tracegrade.errors.TracegradeWarning")


class Thrift(Metric):
    """An efficiency-like metric for the tests: 1 over the number of tool calls."""

    name = "thrift"
    sample_types = (MultiTurnSample,)
    efficiency = True

    def score(self, sample: Any) -> Any:
        calls = len(sample.predicted_tool_calls())
        return self.result(1 / calls if calls else 1.0, f"{calls} call(s)", {"calls": calls})


def _at(second: float) -> str:
    return f"2026-03-01T09:00:{second:06.3f}Z"


def conversation(
    ident: str,
    *,
    right: bool,
    cost: float | None = None,
    seconds: float | None = None,
    extra_call: bool = False,
) -> dict[str, Any]:
    """One call of ``search`` expected; the agent makes it (``right``) or calls ``browse``
    instead; its one AI step costs ``cost`` and takes ``seconds``."""
    calls = [{"name": "search" if right else "browse", "args": {"q": ident}, "id": "c1"}]
    if extra_call:
        calls.append({"name": "noop", "args": {}, "id": "c2"})
    step: dict[str, Any] = {"type": "ai", "content": "", "tool_calls": calls}
    if cost is not None:
        step["usage"] = {"input_tokens": 100, "output_tokens": 10, "cost": cost}
    if seconds is not None:
        step["timing"] = {"started_at": _at(0), "ended_at": _at(seconds)}
    messages: list[dict[str, Any]] = [{"type": "human", "content": "find"}, step]
    done = {"started_at": _at(seconds), "ended_at": _at(seconds)} if seconds is not None else None
    for call in calls:  # the tools take no time of their own, so agent time is the step's
        result = {"type": "tool", "content": "ok", "tool_call_id": call["id"]}
        messages.append(result if done is None else {**result, "timing": done})
    return {
        "id": ident,
        "user_input": messages,
        "reference_tool_calls": [{"name": "search", "args": {"q": ident}}],
    }


# c1, c3, c4 and c5 make the expected call (tool_call_f1 1.0, or 2/3 for c3 with its
# extra call: both pass 0.5); c2 does not (0.0). c5 states no usage and no time.
RUN = [
    conversation("c1", right=True, cost=0.1, seconds=2),
    conversation("c2", right=False, cost=0.3, seconds=4),
    conversation("c3", right=True, cost=0.2, seconds=1, extra_call=True),
    conversation("c4", right=True, cost=0.4, seconds=8),
    conversation("c5", right=True),
]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in records), encoding="utf-8")
    return path


def _metrics() -> list[Metric]:
    return [ToolCallF1(threshold=0.5), Thrift()]


# -- percentiles -------------------------------------------------------------------------


def test_percentiles_interpolate_between_the_closest_ranks() -> None:
    # [1, 2, 4, 8]: rank (n-1)q = 1.5 for p50 -> 2 + 0.5 * (4 - 2) = 3; p90 rank 2.7 ->
    # 4 + 0.7 * 4 = 6.8; p99 rank 2.97 -> 4 + 0.97 * 4 = 7.88 (numpy's "linear").
    ordered = [1.0, 2.0, 4.0, 8.0]
    assert percentile(ordered, 0.5) == 3.0
    assert percentile(ordered, 0.9) == pytest.approx(6.8)
    assert percentile(ordered, 0.99) == pytest.approx(7.88)
    assert percentile(ordered, 0.0) == 1.0 and percentile(ordered, 1.0) == 8.0
    assert percentile([5.0], 0.9) == 5.0  # one value is every percentile
    shape = Distribution.of(array("d", [8, 1, 4, 2]))  # the order given does not matter
    assert shape == Distribution(4, 15.0, 3.75, 3.0, pytest.approx(6.8), pytest.approx(7.88))  # type: ignore[arg-type]
    assert Distribution.of(array("d")) is None


def test_the_runs_distributions_are_the_hand_worked_ones(tmp_path: Path) -> None:
    result = evaluate(str(_write(tmp_path / "d.jsonl", RUN)), _metrics(), progress=False)
    usage = result.agent_usage
    assert usage is not None and usage.conversations == 5
    cost = usage.distributions["cost"]
    # [0.1, 0.2, 0.3, 0.4]: p50 rank 1.5 -> 0.25; p90 rank 2.7 -> 0.37; p99 2.97 -> 0.397
    assert (cost.n, cost.total, cost.mean) == (4, 1.0, 0.25)
    assert (cost.p50, cost.p90, cost.p99) == pytest.approx((0.25, 0.37, 0.397))
    seconds = usage.distributions["agent_seconds"]  # [1, 2, 4, 8], as above
    assert (seconds.n, seconds.total, seconds.p50) == (4, 15.0, 3.0)
    assert (seconds.p90, seconds.p99) == pytest.approx((6.8, 7.88))
    tokens = usage.distributions["tokens"]  # 110 each
    assert (tokens.n, tokens.total, tokens.p99) == (4, 440.0, 110.0)
    assert "reasoning_tokens" not in usage.distributions  # stated by none


# -- the split by agent ------------------------------------------------------------------


TWO_AGENTS = {
    "id": "handed",
    "user_input": [
        {"type": "human", "content": "plan and write"},
        {
            "type": "ai",
            "content": "",
            "metadata": {"agent": "planner"},
            "tool_calls": [{"name": "search", "args": {}, "id": "p1"}],
            "usage": {"input_tokens": 100, "output_tokens": 10, "cost": 0.1},
            "timing": {"started_at": _at(0), "ended_at": _at(2)},
        },
        {
            "type": "tool",
            "content": "r",
            "tool_call_id": "p1",
            "timing": {"started_at": _at(2), "ended_at": _at(3)},
        },
        {
            "type": "ai",
            "content": "written",
            "metadata": {"agent": "writer"},
            "usage": {"input_tokens": 50, "output_tokens": 5, "cost": 0.05},
            "timing": {"started_at": _at(3), "ended_at": _at(5)},
        },
    ],
}


def test_a_two_agent_conversation_is_split_by_speaking_agent() -> None:
    usage = agent_usage_of(MultiTurnSample.from_dict(TWO_AGENTS))
    assert usage is not None and usage.by_agent is not None
    assert usage.agent_seconds == 5.0  # 0 to 5, no gap
    planner, writer = usage.by_agent["planner"], usage.by_agent["writer"]
    # the planner's LLM step (0-2 s) and the tool answering its call (2-3 s)
    assert (planner.input_tokens, planner.output_tokens, planner.cost) == (100, 10, 0.1)
    assert (planner.agent_seconds, planner.tool_seconds, planner.llm_steps) == (3.0, 1.0, 1)
    assert (writer.input_tokens, writer.cost, writer.agent_seconds) == (50, 0.05, 2.0)
    assert writer.tool_seconds is None
    assert set(usage.by_agent) == {"planner", "writer"}
    assert AgentUsage.from_dict(usage.to_dict()) == usage  # the row reads back


def test_rows_without_agents_write_what_they_wrote_before() -> None:
    usage = agent_usage_of(MultiTurnSample.from_dict(RUN[0]))
    assert usage is not None and usage.by_agent is None
    assert "by_agent" not in usage.to_dict()


def test_the_summary_totals_each_agent(tmp_path: Path) -> None:
    records = [TWO_AGENTS, {**TWO_AGENTS, "id": "again"}, RUN[0]]
    result = evaluate(str(_write(tmp_path / "d.jsonl", records)), _metrics(), progress=False)
    usage = result.agent_usage
    assert usage is not None
    assert list(usage.by_agent) == ["planner", "writer"]
    planner = usage.by_agent["planner"]
    assert planner.conversations == 2  # RUN[0] names no agent
    assert planner.cost is not None and planner.cost.total == 0.2
    assert planner.agent_seconds is not None and planner.agent_seconds.total == 6.0
    assert usage.cost is not None and usage.cost.total == pytest.approx(0.4)


def test_each_agent_has_its_distributions_per_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the writer speaks in three conversations, with 2, 4 and 8 s of its own and a cost
    # of 0.05 each; in a fourth its step states no time, so it is in the cost only
    def written(ident: str, seconds: int | None) -> dict[str, Any]:
        record = json.loads(json.dumps(TWO_AGENTS))
        record["id"] = ident
        step = record["user_input"][3]
        if seconds is None:
            del step["timing"]
        else:
            step["timing"] = {"started_at": _at(3), "ended_at": _at(3 + seconds)}
        return record

    records = [written("w2", 2), written("w4", 4), written("w8", 8), written("w?", None)]
    data = _write(tmp_path / "d.jsonl", records)
    result = evaluate(str(data), _metrics(), progress=False)
    assert result.agent_usage is not None
    writer = result.agent_usage.by_agent["writer"].distributions
    seconds = writer["agent_seconds"]
    # over 2, 4, 8: mean 14/3, p50 4, p90 at rank 1.8: 4 + 0.8 * 4 = 7.2
    assert (seconds.n, seconds.p50) == (3, 4.0)
    assert seconds.mean == pytest.approx(14 / 3) and seconds.p90 == pytest.approx(7.2)
    assert (writer["cost"].n, writer["cost"].total) == (4, pytest.approx(0.2))
    planner = result.agent_usage.by_agent["planner"].distributions
    assert planner["agent_seconds"].n == 4 and planner["agent_seconds"].p99 == 3.0
    _evaluate(data, "--no-samples")
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert "Per conversation, by agent" in lines
    at = lines.index("writer tokens 4 55 55 55 55")  # the agent named on its first row
    assert lines[at + 1 : at + 3] == [
        "cost 4 $0.05000 $0.05000 $0.05000 $0.05000",
        "agent time 3 4.67 s 4.00 s 7.20 s 7.92 s",
    ]


# -- against success ---------------------------------------------------------------------


def test_cost_and_time_against_success_are_the_hand_worked_ones(tmp_path: Path) -> None:
    broken = {**RUN[0], "id": "c6"}
    del broken["reference_tool_calls"]  # tool_call_f1 raises on it: neither
    data = _write(tmp_path / "d.jsonl", [*RUN, broken])
    result = evaluate(str(data), _metrics(), progress=False)
    against = result.against_success
    assert against is not None and against.metric == "tool_call_f1"  # the one with a mark
    assert (against.succeeded, against.failed, against.neither) == (4, 1, 1)
    # cost: the run's 1.0 + c6's 0.1 over the 3 successes stating a cost (c1, c3, c4)
    assert against.cost_per_success == pytest.approx(1.1 / 3)
    assert against.cost_succeeded is not None and against.cost_failed is not None
    assert against.cost_succeeded.mean == pytest.approx((0.1 + 0.2 + 0.4) / 3)
    assert (against.cost_failed.total, against.cost_failed.conversations) == (0.3, 1)
    # agent time: (2 + 4 + 1 + 8 + 2) s over the 3 successes stating it
    assert against.seconds_per_success == pytest.approx(17 / 3)
    assert against.seconds_succeeded is not None
    assert against.seconds_succeeded.mean == pytest.approx(11 / 3)
    # thrift over the successes: 1, 1/2 (c3's two calls), 1, 1 (c5 too: no usage needed)
    assert against.efficiency["thrift"].mean == pytest.approx(3.5 / 4)


def test_without_a_pass_mark_there_is_no_success_metric_unless_named(tmp_path: Path) -> None:
    data = str(_write(tmp_path / "d.jsonl", RUN))
    plain = evaluate(data, [ToolCallF1(), Thrift()], progress=False)
    assert plain.against_success is None
    named = evaluate(data, [ToolCallF1(), Thrift()], progress=False, success="thrift")
    against = named.against_success
    # thrift passes at full marks: all but c3 (0.5)
    assert against is not None and (against.succeeded, against.failed) == (4, 1)
    with pytest.raises(ValueError, match="'nope' is not one of the run's metrics"):
        evaluate(data, _metrics(), progress=False, success="nope")


def _agents_record(index: int) -> dict[str, Any]:
    """tests.usage_records' record, its AI steps spoken by two agents in turn."""
    found = usage_record(index)
    for at, message in enumerate(found["user_input"]):
        if message["type"] == "ai" and index % 3:
            message["metadata"] = {"agent": "left" if at % 2 else "right"}
    return found


def _agents_file(path: Path, count: int) -> Path:
    return _write(path, [_agents_record(index) for index in range(count)])


@pytest.mark.parametrize("span_bytes", [1, 5000])
def test_worker_processes_give_the_one_process_summary(tmp_path: Path, span_bytes: int) -> None:
    data = _agents_file(tmp_path / "d.jsonl", 300)
    single = evaluate(str(data), _metrics(), progress=False)
    assert single.agent_usage is not None and single.agent_usage.by_agent
    folded = SummaryAccumulator(_metrics())
    for span in score_file(data, _metrics(), workers=2, span_bytes=span_bytes):
        folded.add_tally(span.tally)
    assert folded.agent_usage == single.agent_usage
    assert folded.against_success == single.against_success
    assert single.against_success is not None and single.against_success.efficiency


def test_a_resumed_run_gives_the_same_summary(tmp_path: Path) -> None:
    data = _agents_file(tmp_path / "d.jsonl", 200)
    full = evaluate(str(data), _metrics(), out=tmp_path / "full.jsonl", progress=False)
    cut = tmp_path / "cut.jsonl"
    evaluate(str(data), _metrics(), out=cut, progress=False)
    cut.write_bytes(b"".join(cut.read_bytes().splitlines(keepends=True)[:77]))
    resumed = evaluate(str(data), _metrics(), out=cut, resume=True, progress=False)
    assert resumed.agent_usage == full.agent_usage
    assert resumed.against_success == full.against_success
    record = json.loads(run_record_path(cut).read_text())
    assert (record["success"], record["efficiency"]) == ("tool_call_f1", ["thrift"])


# -- gates -------------------------------------------------------------------------------


def test_the_usage_gates_from_python(tmp_path: Path) -> None:
    result = evaluate(str(_write(tmp_path / "d.jsonl", RUN[:4])), _metrics(), progress=False)
    assert result.failed_usage_gates(max_cost=0.25, max_p90_latency=6.81) == []
    failed = result.failed_usage_gates(max_cost=0.2, max_p90_latency=6.5)
    assert failed == [
        "mean cost per conversation $0.25 is over $0.2 (4 conversations)",
        "p90 agent time per conversation 6.80 s is over 6.5 s (4 conversations)",
    ]
    with pytest.raises(ValueError, match="max_cost must be a number of at least 0"):
        result.failed_usage_gates(max_cost=-1)


def test_a_gate_over_conversations_that_do_not_all_state_it_fails(tmp_path: Path) -> None:
    result = evaluate(str(_write(tmp_path / "d.jsonl", RUN)), _metrics(), progress=False)
    assert result.failed_usage_gates(max_cost=10, max_p90_latency=100) == [
        "cost unknown (gate: mean ≤ $10): stated by 4 of 5 conversations",
        "agent time unknown (gate: p90 ≤ 100 s): stated by 4 of 5 conversations",
    ]
    nothing = [conversation("n1", right=True)]
    bare = evaluate(str(_write(tmp_path / "n.jsonl", nothing)), _metrics(), progress=False)
    assert bare.failed_usage_gates(max_cost=10) == [
        "cost unknown (gate: mean ≤ $10): no conversation states it"
    ]


def _evaluate(data: Path, *extra: str) -> int:
    return main(
        [
            "evaluate",
            str(data),
            *("-m", "tool_call_f1:threshold=0.5", "--progress", "off", "--no-config"),
            *extra,
        ]
    )


def test_the_cli_gates_exit_with_1_and_say_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write(tmp_path / "d.jsonl", RUN[:4])
    assert _evaluate(data, "--max-cost", "0.25", "--max-p90-latency", "7") == 0
    capsys.readouterr()
    assert _evaluate(data, "--max-cost", "0.2") == 1
    said = capsys.readouterr().err
    assert "gate failed: mean cost per conversation $0.25 is over $0.2" in said
    bare = _write(tmp_path / "n.jsonl", [conversation("n1", right=True)])
    assert _evaluate(bare, "--max-p90-latency", "1") == 1
    assert "agent time unknown (gate: p90 ≤ 1 s): no conversation states it" in (
        capsys.readouterr().err
    )
    assert _evaluate(data, "--max-cost", "cheap") == 2
    assert "--max-cost 'cheap': not a number" in capsys.readouterr().err


def test_the_gates_and_success_from_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write(tmp_path / "d.jsonl", RUN[:4])
    (tmp_path / "tracegrade.toml").write_text(
        'metrics = ["tool_call_f1"]\nsuccess = "tool_call_f1"\nmax_cost = 0.1\n',
        encoding="utf-8",
    )
    assert main(["evaluate", str(data), "--progress", "off"]) == 1
    printed = capsys.readouterr()
    assert "mean cost per conversation $0.25 is over $0.1" in printed.err
    assert "Against success (by tool_call_f1)" in printed.out
    (tmp_path / "tracegrade.toml").write_text(
        'metrics = ["tool_call_f1"]\nsuccess = "f1"\n', encoding="utf-8"
    )
    assert main(["evaluate", str(data), "--progress", "off"]) == 2
    assert "key success: 'f1' is not one of this file's metrics" in capsys.readouterr().err


def test_success_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _write(tmp_path / "d.jsonl", RUN[:4])
    assert main(["evaluate", str(data), "-m", "tool_call_f1", "--progress", "off",
                 "--no-config", "--success", "tool_call_f1"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "Against success (by tool_call_f1)" in printed
    assert _evaluate(data, "--success", "nope") == 2
    assert "--success 'nope': not one of the run's metrics" in capsys.readouterr().err


# -- the console and the HTML report -----------------------------------------------------


def test_the_console_shows_cost_and_time_per_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write(tmp_path / "d.jsonl", [*RUN[:4], TWO_AGENTS])
    assert _evaluate(data, "--no-samples") == 4  # TWO_AGENTS has no reference
    out = capsys.readouterr().out
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "Cost and time per conversation" in lines
    assert "Agent usage over 5 conversations (the judge's is apart)" in lines
    # cost over [0.1, 0.3, 0.2, 0.4, 0.15]: total 1.15, mean 0.23, p50 0.2, p90 rank 3.6
    # -> 0.3 + 0.6 * 0.1 = 0.36, p99 rank 3.96 -> 0.3 + 0.96 * 0.1 = 0.396
    assert "cost 5 $1.15 $0.2300 $0.2000 $0.3600 $0.3960" in lines
    # agent time over [2, 4, 1, 8, 5]: p50 4, p90 rank 3.6 -> 5 + 0.6 * 3 = 6.8
    assert "agent time 5 20.00 s 4.00 s 4.00 s 6.80 s 7.88 s" in lines
    assert "planner 1 1 110 $0.1000 3.00 s" in lines
    assert "writer 1 1 55 $0.05000 2.00 s" in lines
    assert "conversations 3 succeeded, 1 failed, 1 neither" in lines


class _Cells(HTMLParser):
    """The text of each table row of a page, by the id of the table it is in."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[list[str]]] = {}
        self.table: str | None = None
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.table = dict(attrs).get("id")
        elif tag == "tr" and self.table:
            self.rows.setdefault(self.table, []).append([])
        elif tag in ("td", "th") and self.table:
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None and self.table:
            self.rows[self.table][-1].append("".join(self.cell).strip())
            self.cell = None
        elif tag == "table":
            self.table = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def test_the_html_overview_has_the_tables(tmp_path: Path) -> None:
    data = _write(tmp_path / "d.jsonl", [*RUN[:4], TWO_AGENTS])
    html = tmp_path / "r.html"
    assert _evaluate(data, "--out", "r.jsonl", "--html", str(html), "--no-samples") == 4
    page = _Cells()
    page.feed(html.read_text(encoding="utf-8"))
    cost = page.rows["cost-time"]
    assert cost[0] == ["", "n", "total", "mean", "p50", "p90", "p99"]
    assert ["cost", "5", "$1.15", "$0.2300", "$0.2000", "$0.3600", "$0.3960"] in cost
    agents = page.rows["by-agent"]
    assert ["planner", "1", "1", "110", "$0.1000", "3.00 s"] in agents
    success = page.rows["against-success"]
    assert ["cost per success", "$0.3833"] in success  # the run's 1.15 over c1, c3, c4


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        ("max_cost = -1", "max_cost: must be a finite number of US dollars, at least 0, got -1"),
        ("max_p90_latency = inf", "must be a finite number of seconds, at least 0, got inf"),
    ],
)
def test_the_configs_limits_must_be_finite_and_not_negative(
    tmp_path: Path, line: str, rule: str
) -> None:
    from tracegrade.cli.config import ConfigError, load_config

    path = tmp_path / "tracegrade.toml"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rule.replace("(", r"\(")):
        load_config(path)
