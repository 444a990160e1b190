"""Criteria: a user's own criteria or rubric, judged; against the scripted judge server on
127.0.0.1 (real HTTP), from Python, the command line and the config file."""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, Reply, judge_env, judge_server  # noqa: F401

from tracegrade import Criteria, MultiTurnSample, ToolMessage, evaluate, iter_jsonl
from tracegrade.cli import EXIT_OK, EXIT_USAGE, main
from tracegrade.cli.config import ConfigError, load_config
from tracegrade.judge import OpenAIJudge
from tracegrade.judge.templates import load_prompt
from tracegrade.judge.transcripts import call_text
from tracegrade.metrics.criteria import Rubric
from tracegrade.metrics.registry import MetricSpecError, build_metric
from tracegrade.run.run_record import describe_metric

pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

EXAMPLES = Path(__file__).parents[2] / "examples" / "agent_runs.jsonl"
SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("TRACEGRADE_UPDATE_SNAPSHOTS") == "1"

POLITE = "The assistant stays polite and never blames the person, even when a tool fails."
CONFIRMS = "The assistant confirms the booking details with the person before paying."
RECOVERY = {
    1: "a failed tool call is hidden, or the assistant claims a success it did not have",
    2: "the failure is mentioned but nothing is done about it",
    3: "the assistant retries or works around the failure, but the person is not told",
    4: "the assistant works around the failure and tells the person what happened",
}


@pytest.fixture(autouse=True)
def _isolated(judge_env: pytest.MonkeyPatch) -> None:  # noqa: F811
    """No judge settings from the developer's environment; the default cache in tmp."""


def examples() -> dict[str, MultiTurnSample]:
    found = {}
    for sample in iter_jsonl(EXAMPLES):
        assert isinstance(sample, MultiTurnSample) and sample.id is not None
        found[str(sample.id)] = sample
    return found


def question(body: Mapping[str, Any]) -> str:
    """The last user message of a chat-completions body: the question about the sample."""
    return str(body["messages"][-1]["content"])


def passing_judge(body: Mapping[str, Any]) -> dict[str, Any]:
    """A judge that gives the highest level it is offered, with a reason naming it."""
    enum = body["response_format"]["json_schema"]["schema"]["properties"]["level"]["enum"]
    return {"reason": f"fits {enum[-1]!r} best", "level": enum[-1]}


def judge_at(server: JudgeServer, cache: Path | bool = False) -> OpenAIJudge:
    return OpenAIJudge("test-judge", base_url=server.url, cache=cache, max_attempts=1)


# -- the scale and its mapping to 0..1 ----------------------------------------------------


def test_levels_map_to_0_1_as_documented() -> None:
    numbered = Rubric(RECOVERY)
    # (level - lowest) / (highest - lowest) on 1..4: 1 -> 0, 2 -> 1/3, 3 -> 2/3, 4 -> 1
    assert [numbered.value(level) for level in (1, 2, 3, 4)] == [0.0, 1 / 3, 2 / 3, 1.0]
    # TOML writes table keys as text, and levels need not be consecutive: 5 on 0..10 is 0.5
    spaced = Rubric({"10": "great", "0": "useless", "5": "fair"})
    assert spaced.labels == [0, 5, 10] and spaced.value(5) == 0.5
    # named levels, lowest first: position / last position, so "fair" of 3 is 1/2
    named = Rubric({"poor": "p", "fair": "f", "good": "g"})
    assert [named.value(level) for level in ("poor", "fair", "good")] == [0.0, 0.5, 1.0]
    with pytest.raises(ValueError, match=r"'great' is not one of the levels \['poor'"):
        named.value("great")
    assert Criteria(criteria=POLITE).scale == "pass/fail"


@pytest.mark.parametrize(
    ("rubric", "message"),
    [
        ({1: "only one"}, "at least two levels"),
        ({1: "low", "good": "high"}, "all be whole numbers or all be names, not a mix"),
        ({1: "low", "1": "also one"}, "repeats the level"),
        ({1: "low", 2: "  "}, "level 2: its meaning must be non-empty text"),
        (["low", "high"], "rubric must be a mapping of level to its meaning"),
    ],
)
def test_a_bad_rubric_is_refused_saying_why(rubric: Any, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        Criteria(criteria=POLITE, rubric=rubric)


def test_bad_criteria_and_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="criteria must be non-empty text"):
        Criteria(criteria="  ")
    with pytest.raises(ValueError, match="unknown field 'tools'; the fields are conversation"):
        Criteria(criteria=POLITE, include=["conversation", "tools"])
    with pytest.raises(ValueError, match="names a field twice"):
        Criteria(criteria=POLITE, include="reference|reference")


# -- the prompt ----------------------------------------------------------------------------


def _snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    if UPDATE or not path.exists():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"wrote the missing snapshot {path}; look it over and run again")
    assert text == path.read_text(encoding="utf-8"), f"{path} differs (set UPDATE to rewrite)"


def _rendered(metric: Criteria, sample: MultiTurnSample) -> str:
    return load_prompt("criteria").render(metric.variables(sample))


@pytest.mark.parametrize(
    ("record", "metric", "reference"),
    [
        # pass/fail, with a reference given to the sample
        ("flight-paris", Criteria(name="confirms", criteria=CONFIRMS), "AF1235 booked"),
        # a numbered rubric over the conversation and the reference tool calls
        (
            "weather-retry",
            Criteria(
                name="recovery",
                criteria="When a tool call fails, the assistant recovers and says so.",
                rubric=RECOVERY,
                include=["conversation", "reference_tool_calls"],
            ),
            None,
        ),
        # named levels over a conversation without tool calls
        (
            "smalltalk",
            Criteria(
                name="tone",
                criteria="The assistant's tone is warm.",
                rubric={"cold": "curt or dismissive", "plain": "correct", "warm": "friendly"},
            ),
            None,
        ),
    ],
)
def test_the_prompt_for_real_conversations_matches_its_snapshot(
    judge_server: JudgeServer,  # noqa: F811
    record: str,
    metric: Criteria,
    reference: str | None,
) -> None:
    sample = examples()[record]
    if reference is not None:
        sample = MultiTurnSample(**{**sample.to_dict(), "reference": reference})
    judge_server.respond(passing_judge)
    metric.llm = judge_at(judge_server)
    evaluate([sample], [metric])
    (request,) = judge_server.requests
    sent = question(request.body)
    assert sent == _rendered(metric, sample)
    _snapshot(f"criteria_{record}", sent)
    # the question holds the criteria, every level with its meaning, and each tool call
    # with its arguments and result
    assert metric.criteria in sent
    for label, meaning in (metric.rubric or Rubric({"fail": "-", "pass": "-"})).levels:
        assert f"- {label}: " in sent and (metric.rubric is None or meaning in sent)
    calls = [c for m in sample.user_input for c in getattr(m, "tool_calls", None) or ()]
    results = [m.content for m in sample.user_input if isinstance(m, ToolMessage)]
    for call in calls:
        assert f". The agent called {call_text(call)}\n" in sent
    for result in results:
        assert f"): {result}\n" in sent
    assert ("Reference:\n" + reference in sent) if reference else "Reference:" not in sent
    if "reference_tool_calls" in metric.include and sample.reference_tool_calls:
        assert (
            f"Reference tool calls, in order:\n1. {call_text(sample.reference_tool_calls[0])}"
            in sent
        )


def test_the_prompt_examples_are_what_the_metric_writes() -> None:
    """The few-shot examples show samples exactly as a real question shows them."""
    pizza = MultiTurnSample(
        user_input=[
            {
                "type": "human",
                "content": "Two large pizzas, one margherita and one funghi, "
                "delivered to 4 Elm Street.",
            },
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "charge_card", "args": {"amount": 31.0}, "id": "p1"}],
            },
            {
                "type": "tool",
                "content": "charged 31.00 EUR",
                "tool_call_id": "p1",
                "outcome": {"status": "ok"},
            },
            {"type": "ai", "content": "Done! Your pizzas are on their way to 4 Elm Street."},
        ]
    )
    book = MultiTurnSample(
        user_input=[
            {"type": "human", "content": "Renew my library book, the one due Friday."},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "renew_loan", "args": {"item": "due-friday"}, "id": "r1"}],
            },
            {
                "type": "tool",
                "content": "item reserved by another reader",
                "tool_call_id": "r1",
                "outcome": {"status": "error", "error_type": "reserved"},
            },
            {
                "type": "ai",
                "content": "I couldn't renew it: another reader has reserved that book, so it "
                "has to go back by Friday. I can put you on the reservation list for when it "
                "returns, if you like.",
            },
        ],
        reference="The user learns the book cannot be renewed, and why.",
    )
    prompt = load_prompt("criteria")
    shown = [example.variables["sample"] for example in prompt.examples]
    metric = Criteria(criteria="any")
    assert shown == [metric.shown(pizza), metric.shown(book)]
    numbered = Criteria(criteria="any", rubric={1: "a", 2: "b", 3: "c", 4: "d"})
    assert [line[:5] for line in prompt.examples[1].variables["levels"].splitlines()] == [
        line[:5] for line in numbered.variables(book)["levels"].splitlines()
    ]
    assert prompt.examples[0].variables["levels"] == metric.variables(pizza)["levels"]


def test_a_long_run_is_shortened_and_the_row_says_so(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    judge_server.respond(passing_judge)
    long = MultiTurnSample(
        user_input=[
            {"type": "human", "content": "Summarise this: " + "word " * 2_000},
            {"type": "ai", "content": "A summary."},
        ]
    )
    metric = Criteria(name="brief", criteria="Brief.", llm=judge_at(judge_server))
    (row,) = evaluate([long], [metric])
    shortened = row.scores["brief"].details["shortened"]
    # the default budget cuts a text at 3,000 characters: 16 + 10,000 - 3,000 cut
    assert (shortened["texts_cut"], shortened["characters_cut"]) == (1, 7_016)
    assert "[... 7,016 characters cut]" in question(judge_server.requests[0].body)


# -- against the judge server ----------------------------------------------------------------


def two_criteria(judge: OpenAIJudge) -> list[Criteria]:
    return [
        Criteria(name="politeness", criteria=POLITE, llm=judge, threshold=1.0),
        Criteria(name="recovery", criteria="Recovers from failures.", rubric=RECOVERY, llm=judge),
    ]


def graded(body: Mapping[str, Any]) -> dict[str, Any]:
    """Pass for politeness; level 3 of 1..4 for the rubric."""
    text = question(body)
    if "Levels, lowest first:\n- fail:" in text:
        return {"reason": "polite throughout", "level": "pass"}
    return {"reason": "retried, but did not say so", "level": 3}


def test_two_criteria_in_one_run_each_under_its_name_then_all_from_the_cache(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(graded)
    samples = list(examples().values())[:4]
    cache = tmp_path / "cache.sqlite"
    result = evaluate(samples, two_criteria(judge_at(judge_server, cache)))
    assert judge_server.count == 8  # one call per sample per criterion
    assert result["politeness"] == [1.0] * 4
    # level 3 on 1..4: (3 - 1) / (4 - 1)
    assert result["recovery"] == [pytest.approx(2 / 3)] * 4
    row = result.rows[0]
    assert row.scores["politeness"].success is True
    assert row.scores["recovery"].reason == "retried, but did not say so"
    assert row.scores["recovery"].details["level"] == 3
    assert row.scores["recovery"].details["levels"] == [1, 2, 3, 4]
    assert row.scores["politeness"].details["scale"] == "pass/fail"
    schemas = [r.body["response_format"]["json_schema"] for r in judge_server.requests]
    assert {s["name"] for s in schemas} == {"criteria"}
    levels = [s["schema"]["properties"]["level"] for s in schemas]
    assert {"type": "string", "enum": ["fail", "pass"]} in levels
    assert {"type": "integer", "enum": [1, 2, 3, 4]} in levels
    assert all(s["strict"] for s in schemas)
    for request in judge_server.requests:
        text = question(request.body)
        assert POLITE in text or all(f"- {n}: {m}" in text for n, m in RECOVERY.items())

    again = evaluate(samples, two_criteria(judge_at(judge_server, cache)))
    assert judge_server.count == 8  # every answer from the cache
    assert again.usage is not None and (again.usage.requests, again.usage.cached) == (0, 8)
    assert again["recovery"] == result["recovery"]


def test_a_level_out_of_range_is_a_counted_failure_with_its_cause(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    samples = list(examples().values())[:3]
    judge_server.script(
        {"reason": "excellent", "level": 7},  # not a level of 1..4; the repair asked again
        {"reason": "still excellent", "level": 7},
        "not JSON at all",  # then malformed twice
        "{no",
        {"reason": "", "level": 2},  # then a level without a reason
    )
    metric = Criteria(name="recovery", criteria="Recovers.", rubric=RECOVERY)
    metric.llm = judge_at(judge_server)
    result = evaluate(samples, [metric], concurrency=1)
    assert result["recovery"] == [None, None, None]  # never a number
    errors = [row.errors["recovery"] for row in result]
    assert errors[0].startswith("JudgeError: criteria: the judge's answer is unusable: level:")
    assert "7 is not one of [1, 2, 3, 4]" in errors[0]
    assert errors[1].startswith("JudgeError: criteria: the judge's answer is unusable:")
    assert "not JSON" in errors[1]
    assert errors[2] == "JudgeError: recovery: the judge gave level 2 without a reason"
    assert result.summary()["recovery"].failed == 3
    assert judge_server.count == 5


def test_a_sample_without_the_fields_shown_is_refused_by_name(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    metric = Criteria(name="matches", criteria="Meets the reference.", include=["reference"])
    metric.llm = judge_at(judge_server)
    result = evaluate([examples()["smalltalk"]], [metric])
    (error,) = [row.errors["matches"] for row in result]
    assert "matches shows the judge 'reference', and this sample has none of them" in error
    assert judge_server.count == 0


# -- described in the run record -----------------------------------------------------------------


def test_the_run_record_tells_two_criteria_apart_and_reads_back() -> None:
    first = Criteria(name="politeness", criteria=POLITE)
    other = Criteria(name="politeness", criteria=POLITE + " Always.")
    graded_one = Criteria(name="politeness", criteria=POLITE, rubric=RECOVERY)
    described = {describe_metric(m) for m in (first, other, graded_one)}
    assert len(described) == 3
    assert describe_metric(first) == f"criteria:name=politeness,criteria={POLITE!r}"
    for metric in (first, other, graded_one):
        text = describe_metric(metric)
        assert describe_metric(build_metric(text)) == text


def test_resume_refuses_a_run_of_a_different_criterion(
    judge_server: JudgeServer,  # noqa: F811
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judge_server.respond(passing_judge)
    data, out = _data(tmp_path), tmp_path / "out.jsonl"
    judge = ["--judge-model", "test-judge", "--judge-base-url", judge_server.url]
    spec = "criteria:name=politeness,criteria='Polite, always.'"
    assert main(["evaluate", data, "-m", spec, *judge, "--out", str(out)]) == EXIT_OK
    changed = "criteria:name=politeness,criteria='Polite, mostly.'"
    code = main(["evaluate", data, "-m", changed, *judge, "--out", str(out), "--resume"])
    assert code != EXIT_OK
    error = capsys.readouterr().err
    assert "cannot resume" in error and "criteria='Polite, always.'" in error


# -- the command line and the config file --------------------------------------------------------


def _data(tmp_path: Path) -> str:
    path = tmp_path / "runs.jsonl"
    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()[:3]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _rows(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return sorted(rows, key=lambda row: row["index"])


def test_spec_text_in_quotes_may_hold_commas() -> None:
    metric = build_metric(
        "criteria:name=tone,criteria='Warm, brief; it\\'s fine',"
        'rubric=\'{"1": "curt, cold", "2": "warm"}\',include=conversation,threshold=0.5'
    )
    assert isinstance(metric, Criteria)
    assert metric.criteria == "Warm, brief; it's fine"
    assert metric.rubric == Rubric({1: "curt, cold", 2: "warm"})
    assert (metric.include, metric.threshold) == (("conversation",), 0.5)
    # an apostrophe inside unquoted text is just text
    assert build_metric("criteria:criteria=it's polite").criteria == "it's polite"  # type: ignore[attr-defined]
    with pytest.raises(MetricSpecError, match="the quote ' is never closed"):
        build_metric("criteria:criteria='open, and on")
    with pytest.raises(MetricSpecError, match="text after the closing quote"):
        build_metric("criteria:criteria='closed' and more")
    with pytest.raises(MetricSpecError, match="option rubric: rubric must be a JSON object"):
        build_metric("criteria:criteria=x,rubric=1|2")


def test_cli_two_criteria_end_to_end(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(graded)
    out = tmp_path / "out.jsonl"
    arguments = [
        *("evaluate", _data(tmp_path), "--out", str(out)),
        *("--judge-model", "test-judge", "--judge-base-url", judge_server.url),
        *("-m", f"criteria:name=politeness,criteria='{POLITE}',threshold=1"),
        *(
            "-m",
            "criteria:name=recovery,criteria='Recovers, and says so.',rubric="
            + repr(json.dumps(RECOVERY)),
        ),
    ]
    assert main(arguments) == EXIT_OK
    assert judge_server.count == 6  # 3 samples, 2 criteria
    rows = _rows(out)
    assert [row["metrics"]["politeness"]["value"] for row in rows] == [1.0] * 3
    assert [row["metrics"]["recovery"]["value"] for row in rows] == [pytest.approx(2 / 3)] * 3
    record = json.loads((tmp_path / ".out.jsonl.run.json").read_text())
    assert record["metrics"][0] == f"criteria:name=politeness,criteria={POLITE!r},threshold=1.0"
    assert "Recovers, and says so." in record["metrics"][1]


CONFIG = f"""
metrics = ["tool_call_f1"]
thresholds = {{ politeness = 1 }}

[criteria.politeness]
criteria = "{POLITE}"

[criteria.recovery]
criteria = "Recovers from failed tool calls, and says so."
include = ["conversation", "reference_tool_calls"]
threshold = 0.5

[criteria.recovery.rubric]
1 = "{RECOVERY[1]}"
2 = "{RECOVERY[2]}"
3 = "{RECOVERY[3]}"
4 = "{RECOVERY[4]}"
"""


def test_config_tables_end_to_end_and_by_name(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    judge_server.respond(graded)
    (tmp_path / "tracegrade.toml").write_text(CONFIG, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out.jsonl"
    judge = ["--judge-model", "test-judge", "--judge-base-url", judge_server.url]
    assert main(["evaluate", _data(tmp_path), *judge, "--out", str(out)]) == EXIT_OK
    assert judge_server.count == 6  # tool_call_f1 asks no judge
    rows = _rows(out)
    assert set(rows[0]["metrics"]) == {"tool_call_f1", "politeness", "recovery"}
    assert rows[0]["metrics"]["recovery"]["value"] == pytest.approx(2 / 3)
    assert rows[0]["metrics"]["recovery"]["success"] is True  # 2/3 >= 0.5
    record = json.loads((tmp_path / ".out.jsonl.run.json").read_text())
    assert record["thresholds"]["politeness"] == 1.0  # the config's pass mark, by name
    asked = [
        question(r.body) for r in judge_server.requests if "lowest first:\n- 1:" in question(r.body)
    ]
    assert len(asked) == 3 and all("Reference tool calls, in order:\n1. " in text for text in asked)

    # --metric NAME picks one configured criterion
    only = tmp_path / "only.jsonl"
    code = main(["evaluate", _data(tmp_path), *judge, "-m", "recovery", "--out", str(only)])
    assert code == EXIT_OK
    assert set(_rows(only)[0]["metrics"]) == {"recovery"}
    assert judge_server.count == 6  # the same questions: from the cache


@pytest.mark.parametrize(
    ("table", "key", "rule"),
    [
        ('[criteria.tone]\nrubric = { 1 = "a", 2 = "b" }', "criteria.tone", "needs criteria ="),
        (
            '[criteria.tone]\ncriteria = "t"\nrubric = { 1 = "a" }',
            "criteria.tone.rubric",
            "at least two levels",
        ),
        (
            '[criteria.tone]\ncriteria = "t"\ncolour = "red"',
            "criteria.tone.colour",
            "unknown key; a criterion's keys are criteria, rubric, include, threshold",
        ),
        (
            '[criteria.tone]\ncriteria = "t"\nthreshold = 2',
            "criteria.tone.threshold",
            "between 0 and 1",
        ),
        (
            '[criteria.tone]\ncriteria = "t"\ninclude = ["tools"]',
            "criteria.tone.include",
            "unknown field 'tools'",
        ),
        (
            '[criteria.tool_call_f1]\ncriteria = "t"',
            "criteria.tool_call_f1",
            "is the metric tool_call_f1's",
        ),
        (
            'metrics = ["tool_call_f1:name=tone"]\n[criteria.tone]\ncriteria = "t"',
            "criteria.tone",
            "a metric in 'metrics' is named 'tone' too",
        ),
    ],
)
def test_a_bad_criterion_table_names_its_key(
    tmp_path: Path, table: str, key: str, rule: str
) -> None:
    path = tmp_path / "tracegrade.toml"
    path.write_text(table + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.key == key
    assert rule in caught.value.rule


def test_cli_names_an_unknown_criterion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tracegrade.toml").write_text(CONFIG, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["evaluate", _data(tmp_path), "-m", "politenes"]) == EXIT_USAGE
    assert "unknown metric 'politenes'" in capsys.readouterr().err


def test_compare_says_when_a_criterion_changed_under_the_same_name(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tracegrade import compare_runs, load_run

    judge_server.respond(passing_judge)
    data = _data(tmp_path)  # a file, so that the runs write their run records
    judge = judge_at(judge_server)
    paths = []
    for side, text in (("a", POLITE), ("b", POLITE + " Never curt.")):
        metrics = [
            Criteria(name="politeness", criteria=text, llm=judge),
            Criteria(name="tone", criteria="Warm.", llm=judge),
        ]
        paths.append(tmp_path / f"{side}.jsonl")
        evaluate(data, metrics, out=paths[-1], progress=False)
    comparison = compare_runs(load_run(paths[0]), load_run(paths[1]))
    assert comparison.redefined == ("politeness",)  # tone is the same criterion in both
    assert main(["compare", str(paths[0]), str(paths[1])]) == EXIT_OK
    assert "Defined differently in the two runs (see their run records): politeness;" in (
        " ".join(capsys.readouterr().out.split())
    )
    page = tmp_path / "compare.html"
    main(["compare", str(paths[0]), str(paths[1]), "--html", str(page)])
    assert "defined differently in the two runs (see their run records): politeness;" in (
        page.read_text(encoding="utf-8")
    )
    same = compare_runs(load_run(paths[0]), load_run(paths[0]))
    assert same.redefined == ()


def test_a_criterion_travels_to_worker_processes_whole() -> None:
    metric = Criteria(
        name="recovery", criteria="Recovers.", rubric=RECOVERY, include="conversation"
    )
    copy = pickle.loads(pickle.dumps(metric))
    assert (copy.name, copy.criteria, copy.rubric, copy.include) == (
        "recovery",
        "Recovers.",
        Rubric(RECOVERY),
        ("conversation",),
    )
    assert describe_metric(copy) == describe_metric(metric)
