"""``auto`` on OTLP files reads them exactly as the explicit source (``otel`` or
``openinference``, told from the spans) does: the same samples, ids, grouping and
multi-trace files, through the command line and Python alike; and a file of spans from
which nothing can be read is an error (exit code 3), never "0 conversations".

Fixtures: the OTLP documents are recorded with the real OpenTelemetry SDK by the writers
in ``shapes_otel`` / ``shapes_openinference``; every file under ``fixtures/`` holding
``resourceSpans`` is run too. ``fixtures/otlp/opentelemetry-proto-trace.json`` is the
OTLP/JSON example of the OpenTelemetry protocol itself (repository
open-telemetry/opentelemetry-proto, path ``examples/trace.json``, commit
ca6170ef02a5c2561ab0f5c9da274f6b713dd3ea; unchanged): one server span, no LLM activity.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.convert.shapes_openinference import as_openinference
from tests.convert.shapes_otel import Recorder, as_otel, as_otel_events
from tests.convert.step_facts import bare_converter, bare_reader
from tests.convert.test_otel import STANDARD, agent, assistant, chat, user
from tests.test_cli_files import one_line, run_cli

from tracegrade import AIMessage, EvaluationDataset, HumanMessage, ToolCallF1, evaluate
from tracegrade.cli import EXIT_INPUT, EXIT_OK, main
from tracegrade.convert import ConversionError, NothingReadError
from tracegrade.convert import convert_messages as convert_with_facts
from tracegrade.convert.otel import read_otlp as read_with_facts
from tracegrade.run.runner import count_records, read_records

# What was said and called, compared without the step facts (usage, timing, outcome) that
# every span adds; test_trace_facts.py tests those.
convert_messages = bare_converter(convert_with_facts)
read_otlp = bare_reader(read_with_facts)


FIXTURES = Path(__file__).parent / "fixtures"
SHORT = [HumanMessage(content="hi"), AIMessage(content="hello")]


def _lines(documents: list[Any]) -> bytes:
    return b"".join(orjson.dumps(document) + b"\n" for document in documents)


def _conversations() -> bytes:
    """Two traces of conversation c-1 and one of c-2: grouping changes the samples."""
    recorder = Recorder()
    history: list[Any] = []
    for question, answer in (("hi", "hello"), ("and then?", "bye")):
        root = agent(recorder, gen_ai__conversation__id="c-1")
        chat(recorder, root, [*history, user(question)], [assistant(answer)])
        recorder.close(root)
        history += [user(question), assistant(answer)]
    chat(recorder, None, [user("x")], [assistant("y")], gen_ai__conversation__id="c-2")
    return orjson.dumps(recorder.document())


# name -> (file name, content, explicit source)
GENERATED: dict[str, Callable[[], tuple[str, bytes, str]]] = {
    "otel document": lambda: ("trace.json", orjson.dumps(as_otel(STANDARD)), "otel"),
    "otel events, two traces in a JSON list": lambda: (
        "traces.json",
        orjson.dumps([as_otel_events(STANDARD), as_otel_events(SHORT)]),
        "otel",
    ),
    "otel, JSON Lines": lambda: (
        "traces.jsonl",
        _lines([as_otel(STANDARD), as_otel(SHORT), as_otel(STANDARD)]),
        "otel",
    ),
    "otel, gzip JSON Lines": lambda: (
        "traces.jsonl.gz",
        gzip.compress(_lines([as_otel(SHORT), as_otel(STANDARD)])),
        "otel",
    ),
    "openinference, JSON Lines": lambda: (
        "spans.jsonl",
        _lines([as_openinference(STANDARD), as_openinference(SHORT)]),
        "openinference",
    ),
    "openinference after a line of plain spans": lambda: (
        "mixed.jsonl",
        _lines([as_otel(SHORT), as_openinference(STANDARD)]),
        "openinference",
    ),
    "conversations": lambda: ("conversations.json", _conversations(), "otel"),
}


def _fixture_files() -> list[Path]:
    return sorted(
        path
        for path in FIXTURES.rglob("*")
        if path.is_file() and b"resourceSpans" in path.read_bytes()[:100_000]
    )


def _explicit_source(data: bytes) -> str:
    """The source a fixture file is written for: OpenInference spans name their kind."""
    return "openinference" if b"openinference.span.kind" in data else "otel"


def _cases() -> list[Any]:
    cases = [pytest.param(make, id=name) for name, make in GENERATED.items()]
    for path in _fixture_files():
        data = path.read_bytes()
        made = (path.name, data, _explicit_source(data))
        cases.append(pytest.param(lambda made=made: made, id=path.relative_to(FIXTURES).as_posix()))
    return cases


def _convert(
    source: str, name: str, group_by: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, bytes, str]:
    out = Path("out.jsonl")  # named in the message: the same whatever the source
    out.unlink(missing_ok=True)
    code = main(["convert", "--from", source, "--group-by", group_by, name, str(out)])
    written = out.read_bytes() if out.exists() else b""
    return code, written, capsys.readouterr().err


@pytest.mark.parametrize("group_by", ["trace", "conversation"])
@pytest.mark.parametrize("make", _cases())
def test_auto_converts_every_otlp_fixture_exactly_as_the_explicit_source(
    make: Callable[[], tuple[str, bytes, str]],
    group_by: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    name, data, source = make()
    Path(name).write_bytes(data)
    explicit = _convert(source, name, group_by, capsys)
    automatic = _convert("auto", name, group_by, capsys)
    assert automatic == explicit
    code, written, printed = automatic
    assert "tracegrade.convert" not in printed  # no Python-only hint for a CLI user
    if code == EXIT_OK:
        samples = [orjson.loads(line) for line in written.splitlines()]
        assert samples and all(isinstance(sample["id"], str) for sample in samples)


def test_auto_reads_several_traces_with_their_ids_and_groups_by_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("conversations.json").write_bytes(_conversations())
    code, written, _ = _convert("auto", "conversations.json", "conversation", capsys)
    assert code == EXIT_OK
    samples = [orjson.loads(line) for line in written.splitlines()]
    assert [sample["id"] for sample in samples] == ["c-1", "c-2"]
    assert [message["content"] for message in samples[0]["user_input"]] == [
        "hi",
        "hello",
        "and then?",
        "bye",
    ]
    code, written, _ = _convert("auto", "conversations.json", "trace", capsys)
    traces = [orjson.loads(line)["id"] for line in written.splitlines()]
    assert code == EXIT_OK and len(traces) == 3 and all(len(key) == 32 for key in traces)


def test_auto_on_standard_input_reads_otlp_and_other_records_without_losing_any() -> None:
    traces = _lines([as_otel(STANDARD), as_otel(SHORT)])
    automatic = run_cli("convert", "-", "-", stdin=b"\n" + traces)
    explicit = run_cli("convert", "--from", "otel", "-", "-", stdin=b"\n" + traces)
    assert automatic.returncode == explicit.returncode == EXIT_OK
    assert automatic.stdout == explicit.stdout and len(automatic.stdout.splitlines()) == 2
    chats = b'[{"role": "user", "content": "hi"}]\n[{"role": "user", "content": "yo"}]\n'
    plain = run_cli("convert", "-", "-", stdin=chats)
    assert plain.returncode == EXIT_OK and plain.stdout.count(b"user_input") == 2


def test_python_auto_gives_the_samples_of_the_explicit_source(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    path.write_bytes(_lines([as_openinference(STANDARD), as_openinference(SHORT)]))
    automatic = EvaluationDataset.from_conversations(path).to_list()
    assert automatic == EvaluationDataset.from_conversations(path, "openinference").to_list()
    assert [sample["id"] for sample in automatic] == [
        c.key for c in read_otlp(path, "openinference")
    ]
    rows = evaluate(path, [ToolCallF1()], source="auto").rows
    assert [row.id for row in rows] == [sample["id"] for sample in automatic]


def test_evaluate_source_auto_scores_the_rows_of_the_explicit_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("traces.jsonl").write_bytes(_lines([as_otel(STANDARD), as_otel(SHORT)]))
    rows = {}
    for source in ("auto", "otel"):
        arguments = ["traces.jsonl", "-m", "tool_call_f1", "--progress", "off"]
        code = main(["evaluate", *arguments, "--source", source, "--out", f"{source}.jsonl"])
        rows[source] = (code, Path(f"{source}.jsonl").read_bytes())
    capsys.readouterr()
    assert rows["auto"] == rows["otel"]
    ids = [orjson.loads(line)["id"] for line in rows["auto"][1].splitlines()]
    assert ids == [trace.key for trace in read_otlp("traces.jsonl")]


def test_progress_counts_traces_not_lines_for_auto(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_bytes(_lines([as_otel(STANDARD), as_otel(SHORT), as_otel(SHORT)]))
    assert count_records(path, source="auto") is None  # traces are known only once read
    chats = tmp_path / "chats.jsonl"
    chats.write_bytes(b'[{"role": "user", "content": "hi"}]\n' * 3)
    assert count_records(chats, source="auto") == 3


# --- several traces given where one conversation is read ---------------------------------


def test_convert_messages_on_several_traces_points_to_read_otlp_and_files() -> None:
    export = [as_openinference(STANDARD), as_openinference(SHORT)]
    with pytest.raises(ConversionError) as raised:
        convert_messages(export)
    text = str(raised.value)
    assert "found 2 traces with openinference spans" in text
    assert "tracegrade.convert.otel.read_otlp(..., format='openinference')" in text
    assert "as a file of its own" in text
    assert [c.messages for c in read_otlp(export, "openinference")] == [STANDARD, SHORT]


def test_a_record_holding_several_traces_names_what_a_cli_user_can_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    wrapped = {"id": "run-1", "conversation": [as_otel(STANDARD), as_otel(SHORT)]}
    Path("runs.jsonl").write_bytes(_lines([wrapped]))
    code, _, printed = _convert("auto", "runs.jsonl", "trace", capsys)
    assert code == EXIT_INPUT
    assert "runs.jsonl line 1, field conversation: found 2 traces with otel spans" in printed
    assert "give the export as a file of its own (source 'otel' or 'auto')" in printed


# --- nothing read: an error, exit 3 --------------------------------------------------------


def _unknown_attributes() -> bytes:
    """Spans that look like LLM activity, in attributes no reader knows."""
    recorder = Recorder()
    root = recorder.open("llm run", {"gen_ai.foo": "bar"})
    recorder.span("step", {"gen_ai.foo.bar": 1}, root)
    recorder.close(root)
    return orjson.dumps(recorder.document())


NOTHING = {
    "unknown gen_ai attributes": (
        "unknown.json",
        _unknown_attributes,
        "2 of the 2 spans look like LLM or agent activity",
    ),
    "no LLM span (opentelemetry-proto example)": (
        "trace.json",
        lambda: (FIXTURES / "otlp" / "opentelemetry-proto-trace.json").read_bytes(),
        "none of the 1 spans carries LLM or tool activity",
    ),
    "no span at all": ("empty.jsonl", lambda: b'{"resourceSpans": []}\n', "holds no spans"),
}


@pytest.mark.parametrize(("name", "make", "said"), list(NOTHING.values()), ids=list(NOTHING))
@pytest.mark.parametrize("source", ["auto", "otel", "openinference"])
def test_nothing_read_exits_3_naming_the_file(
    name: str,
    make: Callable[[], bytes],
    said: str,
    source: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    Path(name).write_bytes(make())
    code, written, printed = _convert(source, name, "trace", capsys)
    assert code == EXIT_INPUT and written == b""
    assert one_line(printed).startswith(f"tracegrade: {name}: ")
    assert said in printed
    arguments = ["evaluate", name, "--source", source, "-m", "tool_call_f1", "--progress", "off"]
    assert main(arguments) == EXIT_INPUT
    assert one_line(capsys.readouterr().err).startswith(f"tracegrade: {name}: ")


def test_nothing_read_is_raised_from_python(tmp_path: Path) -> None:
    path = tmp_path / "unknown.json"
    path.write_bytes(_unknown_attributes())
    activity = r"2 of the 2 spans look like LLM or agent activity.*: gen_ai.foo, gen_ai.foo.bar"
    with pytest.raises(NothingReadError, match=activity):
        read_otlp(path)
    for read in (
        lambda: list(EvaluationDataset.from_conversations(path)),
        lambda: list(read_records(path, source="otel")),
        lambda: evaluate(path, [ToolCallF1()], source="auto"),
    ):
        with pytest.raises(NothingReadError, match=r"unknown.json: 2 of the 2 spans"):
            read()


def test_arguments_that_are_not_json_name_the_command_line_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:

    monkeypatch.chdir(tmp_path)
    recorder = Recorder()
    chat(recorder, None, [user("book")], [assistant("", ("c1", "book", "{not json"))])
    Path("trace.json").write_bytes(orjson.dumps(recorder.document()))
    code, _, printed = _convert("auto", "trace.json", "trace", capsys)
    assert code == EXIT_INPUT
    assert "(--keep-invalid-arguments on the command line)" in one_line(
        printed.splitlines()[0] + "\n"
    )
    assert main(["convert", "--keep-invalid-arguments", "trace.json", "out.jsonl"]) == EXIT_OK
