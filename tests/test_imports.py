"""What importing tracegrade loads: the command line and the package stay light, and the
modules they leave out load when something uses them.

Each test runs in a fresh interpreter, since this one has long loaded everything.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from rapidfuzz.distance import Hamming, Jaro, JaroWinkler, Levenshtein

import tracegrade

# Where each public name is defined: the modules ``tracegrade/__init__.py`` used to import
# them from, written out here so the test does not take the package's word for it.
PUBLIC = {
    "tracegrade.convert": [
        "ConversionError",
        "convert_messages",
        "sample_from_messages",
        "to_openai",
    ],
    "tracegrade.io.dataset": ["EvaluationDataset", "iter_jsonl"],
    "tracegrade.backends.traces": ["Traces", "pull"],
    "tracegrade.errors": [
        "InputError",
        "MissingFieldError",
        "RecordError",
        "TracegradeError",
        "TracegradeWarning",
    ],
    "tracegrade.model.messages": [
        "AIMessage",
        "HumanMessage",
        "Message",
        "ToolCall",
        "ToolCallType",
        "ToolMessage",
        "parse_message",
    ],
    "tracegrade.metrics.base": ["Metric"],
    "tracegrade.metrics.efficiency": ["ToolCallEfficiency"],
    "tracegrade.metrics.goal": [
        "AgentGoalAccuracyWithReference",
        "AgentGoalAccuracyWithoutReference",
    ],
    "tracegrade.metrics.strings": [
        "DistanceMeasure",
        "ExactMatch",
        "NonLLMStringSimilarity",
        "StringMetric",
        "StringPresence",
    ],
    "tracegrade.metrics.tool_calls": ["ToolCallAccuracy", "ToolCallF1", "ToolCorrectnessMetric"],
    "tracegrade.metrics.topic": ["TopicAdherenceScore"],
    "tracegrade.metrics.criteria": ["Criteria"],
    "tracegrade.metrics.trajectory": ["TrajectoryMatch"],
    "tracegrade.metrics.trajectory_judge": ["TrajectoryJudge"],
    "tracegrade.metrics.tool_error_recovery": ["ToolErrorRecovery"],
    "tracegrade.metrics.handoffs": ["HandoffMatch"],
    "tracegrade.metrics.arguments": ["ArgumentMatch", "any_of", "optional"],
    "tracegrade.metrics.semantic": ["semantic"],
    "tracegrade.metrics.validity": ["ToolCallValidity"],
    "tracegrade.metrics.budgets": ["CostBudget", "LatencyBudget", "TokenBudget"],
    "tracegrade.pricing": ["PriceTable", "read_prices"],
    "tracegrade.model.results": ["SampleResult", "Score"],
    "tracegrade.run.results": ["EvaluationResult", "MetricSummary"],
    "tracegrade.report.loaded": ["LoadedRun", "load_run"],
    "tracegrade.report.compare": ["RunComparison", "compare_runs"],
    "tracegrade.report.agreement": ["Agreement", "agreement"],
    "tracegrade.report.reports": ["report_results_file"],
    "tracegrade.run.pushing": ["PushSummary", "push"],
    "tracegrade.run.runner": ["aiter_evaluate", "iter_evaluate"],
    "tracegrade.run.session": ["aevaluate", "evaluate"],
    "tracegrade.model.samples": ["EvalTestCase", "MultiTurnSample", "Sample", "SingleTurnSample"],
}

# Modules the deterministic ``evaluate`` path has no use for.
HEAVY = ["asyncio", "rapidfuzz", "rich.progress", "tomllib", "jinja2", "tracegrade.report.html"]
# JSON libraries tracegrade does not use (msgspec reads and writes all its JSON): no run
# loads them, not even to read again a line that does not decode as a sample.
FOREIGN_JSON = ["pydantic", "pydantic_core", "orjson"]


def fresh(code: str) -> Any:
    """Run ``code`` in a new interpreter; it prints one JSON value, which is returned."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_command_line_loads_only_what_a_deterministic_run_needs() -> None:
    loaded = fresh(
        """
        import json, sys
        import tracegrade.cli
        print(json.dumps(sorted(sys.modules)))
        """
    )
    assert [name for name in [*HEAVY, *FOREIGN_JSON] if name in loaded] == []
    # the converters load for --source and convert; naming SOURCES for --help loads none
    assert [name for name in loaded if name.startswith("tracegrade.convert.")] == []
    assert [name for name in loaded if name.startswith("tracegrade.judge")] == []


def test_importing_the_package_loads_none_of_its_modules() -> None:
    loaded = fresh(
        """
        import json, sys
        import tracegrade
        print(json.dumps([tracegrade.__version__, sorted(sys.modules)]))
        """
    )
    version, modules = loaded
    assert isinstance(version, str) and version
    # the two modules it loads hold the version string and the hook through which a
    # result is drawn in HTML, standard library alone
    loaded = [name for name in modules if name.startswith("tracegrade")]
    assert loaded == ["tracegrade", "tracegrade._display", "tracegrade._version"]


def test_every_public_name_imports_as_the_object_its_module_defines() -> None:
    names = [name for names in PUBLIC.values() for name in names]
    found = fresh(
        f"""
        import importlib, json
        import tracegrade
        from tracegrade import {", ".join(names)}
        from tracegrade import __version__

        public = {PUBLIC!r}
        here = dict(globals())
        same = {{
            name: here[name] is getattr(importlib.import_module(module), name)
            and getattr(tracegrade, name) is here[name]
            for module, names in public.items()
            for name in names
        }}
        star = {{}}
        exec("from tracegrade import *", star)
        print(json.dumps({{
            "same": same,
            "all": sorted(tracegrade.__all__),
            "star": sorted(name for name in star if name != "__builtins__"),
            "dir": sorted(set(tracegrade.__all__) - set(dir(tracegrade))),
            "version": __version__ == tracegrade.__version__,
        }}))
        """
    )
    assert found["same"] == dict.fromkeys(names, True)
    assert found["all"] == sorted([*names, "__version__"])
    assert found["star"] == found["all"]
    assert found["dir"] == []
    assert found["version"]


def test_names_the_package_never_had_still_raise_attribute_error() -> None:
    message = fresh(
        """
        import json
        import tracegrade
        try:
            tracegrade.no_such_name
        except AttributeError as error:
            print(json.dumps(str(error)))
        """
    )
    assert message == "module 'tracegrade' has no attribute 'no_such_name'"


def test_submodules_stay_reachable_as_attributes_after_a_bare_import() -> None:
    found = fresh(
        """
        import json
        import tracegrade
        import tracegrade.metrics.tool_calls as tool_calls
        print(json.dumps([
            tracegrade.metrics.tool_calls is tool_calls,
            tracegrade.judge.base.Usage.__name__,
            tracegrade.convert.convert_messages is tracegrade.convert_messages,
        ]))
        """
    )
    assert found == [True, "Usage", True]


def test_the_converters_names_load_on_first_use() -> None:
    found = fresh(
        """
        import json, sys
        import tracegrade.convert as convert
        before = sorted(name for name in sys.modules if name.startswith("tracegrade.convert."))
        from tracegrade.convert import ConversionError, detect_source, to_openai
        from tracegrade.convert import _base, detect, export
        print(json.dumps([
            before,
            list(convert.SOURCES),
            ConversionError is _base.ConversionError,
            detect_source is detect.detect_source,
            to_openai is export.to_openai,
        ]))
        """
    )
    before, sources, *same = found
    assert before == []
    assert sources[0] == "auto" and "langchain" in sources
    assert same == [True, True, True]


def test_string_similarity_loads_rapidfuzz_when_it_first_scores() -> None:
    found = fresh(
        """
        import json, sys
        from tracegrade import NonLLMStringSimilarity, SingleTurnSample
        before = "rapidfuzz" in sys.modules
        sample = SingleTurnSample(response="sitting", reference="kitten")
        values = {
            measure: NonLLMStringSimilarity(measure).score(sample).value
            for measure in ("levenshtein", "hamming", "jaro", "jaro_winkler")
        }
        print(json.dumps([before, "rapidfuzz" in sys.modules, values]))
        """
    )
    before, after, values = found
    assert (before, after) == (False, True)
    assert values == {
        "levenshtein": 1 - Levenshtein.normalized_distance("kitten", "sitting"),
        "hamming": 1 - Hamming.normalized_distance("kitten", "sitting"),
        "jaro": 1 - Jaro.normalized_distance("kitten", "sitting"),
        "jaro_winkler": 1 - JaroWinkler.normalized_distance("kitten", "sitting"),
    }
    assert abs(values["levenshtein"] - (1 - 3 / 7)) < 1e-9


def test_the_library_entry_points_leave_heavy_modules_unloaded() -> None:
    loaded = fresh(
        """
        import json, sys
        from tracegrade import evaluate, iter_evaluate, ToolCallF1, TopicAdherenceScore
        print(json.dumps(sorted(sys.modules)))
        """
    )
    assert [name for name in [*HEAVY, "rich"] if name in loaded] == []


CONVERSATION = {
    "id": "c1",
    "user_input": [
        {"type": "human", "content": "Weather in Oslo?"},
        {
            "type": "ai",
            "content": "",
            "tool_calls": [{"name": "weather", "args": {"city": "Oslo", "days": [1, 2]}}],
        },
        {"type": "tool", "content": "cold"},
        {"type": "ai", "content": "Cold."},
    ],
    "reference_tool_calls": [{"name": "weather", "args": {"city": "Oslo", "days": [1]}}],
}
# A ToolMessage opening the conversation breaks the model's ordering rule.
BROKEN = {
    "user_input": [{"type": "tool", "content": "x"}],
    "reference_tool_calls": [],
}
TOOL_METRICS = ["tool_call_f1", "tool_call_accuracy", "tool_correctness"]


def _cli_run(tmp_path: Any, records: list[dict[str, Any]], workers: str) -> Any:
    """A CLI run over ``records`` in a fresh interpreter: its exit code, which of
    FOREIGN_JSON it loaded, and its rows."""
    data, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    data.write_text("".join(json.dumps(record) + "\n" for record in records))
    metrics = [part for name in TOOL_METRICS for part in ("--metric", name)]
    argv = ["evaluate", str(data), *metrics, "--out", str(out), "--progress", "off"]
    argv += ["--no-config", "--workers", workers]
    code, loaded = fresh(
        f"""
        import contextlib, io, json, sys
        from tracegrade.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main({argv!r})
        print(json.dumps([code, [name for name in {FOREIGN_JSON!r} if name in sys.modules]]))
        """
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return code, loaded, rows


def test_a_run_of_well_formed_conversations_loads_no_other_json_library(tmp_path: Any) -> None:
    for workers in ("1", "2"):
        code, loaded, rows = _cli_run(tmp_path, [CONVERSATION] * 3, workers)
        assert (code, loaded) == (0, [])
        assert [row["status"] for row in rows] == ["scored"] * 3
        f1 = rows[0]["metrics"]["tool_call_f1"]
        assert f1["value"] == 0.0 and "missing: weather(city='Oslo', days=[1])" in f1["reason"]
        assert rows[0]["metrics"]["tool_correctness"]["value"] == 1.0


def test_a_record_that_breaks_a_rule_is_read_again_and_named(tmp_path: Any) -> None:
    code, loaded, rows = _cli_run(tmp_path, [CONVERSATION, BROKEN], "1")
    assert (code, loaded) == (3, [])
    assert [row["status"] for row in rows] == ["scored", "rejected"]
    assert "user_input[0]" in rows[1]["rejected"]
    assert "a ToolMessage must follow an AIMessage that called tools" in rows[1]["rejected"]


def test_a_result_draws_itself_with_the_report_layer_loaded_on_first_use(tmp_path: Any) -> None:
    page = tmp_path / "report.html"
    before, after, table = fresh(
        f"""
        import json, sys
        from tracegrade.run.session import evaluate
        from tracegrade.metrics.tool_calls import ToolCallF1
        result = evaluate([{CONVERSATION!r}], [ToolCallF1()], progress=False)
        before = "tracegrade.report.reports" in sys.modules
        table = result._repr_html_()
        result.to_html({str(page)!r})
        print(json.dumps([before, "tracegrade.report.reports" in sys.modules, table]))
        """
    )
    assert (before, after) == (False, True)
    assert "<code>tool_call_f1</code>" in table
    assert "1 records: 1 scored, 0 failed, 0 rejected" in table
    assert "<title>tracegrade report</title>" in page.read_text(encoding="utf-8")


def _imported_tops(path: Path) -> set[str]:
    """The top-level names of every module ``path`` imports, at any depth of its code."""
    tops: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    return tops


def test_no_module_of_tracegrade_imports_a_foreign_json_library() -> None:
    source = Path(tracegrade.__file__).parent
    found = {
        str(path.relative_to(source)): sorted(_imported_tops(path) & set(FOREIGN_JSON))
        for path in sorted(source.rglob("*.py"))
    }
    assert {path: tops for path, tops in found.items() if tops} == {}
    # the check reads what it should: a framework module named like one is not one
    assert "pydantic_ai" in _imported_tops(source / "convert" / "pydantic_ai.py")
