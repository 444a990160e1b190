"""Score tracegrade JSON lines with deepeval's ToolCorrectnessMetric, for the benchmark.

    VENV_PYTHON bench/competitors/deepeval_bench.py MODE INPUT.jsonl OUTPUT.jsonl

Modes:

- ``evaluate``: ``deepeval.evaluate(test_cases, [metric])`` with no indicator or printed
  results and ``CacheConfig(write_cache=False)``. With the default ``write_cache=True``
  deepeval rewrites (and fsyncs) the whole test run file after every test case, so the
  run time grows with the square of the number of cases.
- ``evaluate-default``: the same with the default ``CacheConfig()``, to show that cost.
- ``measure``: ``metric.measure(test_case, _show_indicator=False)`` per sample; the score
  is read from ``metric.score``, since ``measure`` returns None when ``async_mode`` is on
  (the default). ``_show_indicator`` is private, but the only way to stop ``measure``
  from starting a rich spinner on every call.

Each conversation becomes an ``LLMTestCase`` whose ``tools_called`` are all tool calls of
all AI messages in order and whose ``expected_tools`` are the reference tool calls (as
``ToolCall(name, input_parameters=args)``). The metric keeps its defaults (names only, no
order, no exact match), so its score is computed in code. Its constructor still builds
the default evaluation LLM, which fails without ``OPENAI_API_KEY``; a placeholder model
that raises if called is passed instead. It is never called: the only LLM step is the
tool-selection check, and that runs only when ``available_tools`` is given.

Writes one ``{"index", "id", "scores"}`` line per sample and prints one JSON summary as
the last line of stdout; everything the library prints goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any, TextIO

from common import keep_stdout, summarise, write

MODES = ("evaluate", "evaluate-default", "measure")
NAME = "tool_correctness"


def test_cases(handle: TextIO) -> Iterator[tuple[str | None, Any]]:
    """Each line as (id, LLMTestCase)."""
    from deepeval.test_case import LLMTestCase, ToolCall

    for line in handle:
        record = json.loads(line)
        messages = record["user_input"]
        called = [
            ToolCall(name=call["name"], input_parameters=call["args"])
            for message in messages
            if message["type"] == "ai"
            for call in message.get("tool_calls") or ()
        ]
        expected = [
            ToolCall(name=call["name"], input_parameters=call["args"])
            for call in record["reference_tool_calls"]
        ]
        asked = "\n".join(m["content"] for m in messages if m["type"] == "human")
        answers = [m.get("content") or "" for m in messages if m["type"] == "ai"]
        case = LLMTestCase(
            input=asked,
            actual_output=answers[-1] if answers else None,
            tools_called=called,
            expected_tools=expected,
        )
        yield record.get("id"), case


def new_metric() -> Any:
    """ToolCorrectnessMetric with default settings and a model that is never called."""
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.models import DeepEvalBaseLLM

    class NoLLM(DeepEvalBaseLLM):
        def load_model(self, *args: Any, **kwargs: Any) -> NoLLM:
            return self

        def generate(self, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError("the benchmark configures no LLM")

        async def a_generate(self, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError("the benchmark configures no LLM")

        def get_model_name(self, *args: Any, **kwargs: Any) -> str:
            return "none"

    return ToolCorrectnessMetric(model=NoLLM())


def run_evaluate(source: str, target: str, write_cache: bool) -> int:
    from deepeval import evaluate
    from deepeval.evaluate import CacheConfig, DisplayConfig

    with open(source, encoding="utf-8") as handle:
        rows = list(test_cases(handle))
    display = DisplayConfig(show_indicator=False, print_results=False, inspect_after_run=False)
    cache = CacheConfig(write_cache=write_cache)
    cases = [case for _, case in rows]
    result = evaluate(cases, [new_metric()], display_config=display, cache_config=cache)
    results = sorted(result.test_results, key=lambda test: test.index)
    with open(target, "w", encoding="utf-8") as out:
        for index, ((record_id, _), test) in enumerate(zip(rows, results, strict=True)):
            (data,) = test.metrics_data
            write(out, index, record_id, {NAME: data.score})
    return len(rows)


def run_measure(source: str, target: str) -> int:
    metric = new_metric()
    count = 0
    with open(source, encoding="utf-8") as handle, open(target, "w", encoding="utf-8") as out:
        for index, (record_id, case) in enumerate(test_cases(handle)):
            metric.measure(case, _show_indicator=False)
            write(out, index, record_id, {NAME: metric.score})
            count += 1
    return count


def main() -> None:
    if len(sys.argv) != 4 or sys.argv[1] not in MODES:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(MODES)}}} INPUT.jsonl OUTPUT.jsonl")
    mode, source, target = sys.argv[1:]
    # deepeval keeps its state (.deepeval/: test-run files, key file) in the working
    # directory; put it in a scratch directory instead of the caller's checkout.
    state = os.path.join(tempfile.gettempdir(), "tracegrade-bench-deepeval")
    os.environ.setdefault("DEEPEVAL_CACHE_FOLDER", state)
    os.environ.setdefault("DEEPEVAL_HOME", state)
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    os.environ.setdefault("DEEPEVAL_NO_INSPECT_PROMPT", "1")
    os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
    os.environ.setdefault("DEEPEVAL_UPDATE_WARNING_OPT_IN", "0")
    summary_fd = keep_stdout()  # anything the library prints lands on stderr

    started = time.perf_counter()
    import deepeval  # noqa: F401
    from deepeval.evaluate import CacheConfig, DisplayConfig  # noqa: F401
    from deepeval.metrics import ToolCorrectnessMetric  # noqa: F401
    from deepeval.test_case import LLMTestCase, ToolCall  # noqa: F401

    import_seconds = time.perf_counter() - started

    started = time.perf_counter()
    if mode == "measure":
        count = run_measure(source, target)
    else:
        count = run_evaluate(source, target, write_cache=mode == "evaluate-default")
    seconds = time.perf_counter() - started

    summarise(summary_fd, "deepeval", mode, count, seconds, import_seconds)


if __name__ == "__main__":
    main()
