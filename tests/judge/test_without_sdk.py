"""Without the ``openai`` extra: everything but the OpenAI-compatible judge works, and
that judge says which extra to install.

Each test runs a fresh interpreter in which ``openai`` cannot be imported (None in
``sys.modules``), as if the package were not installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.blocked_imports import run_without

EXAMPLE = Path(__file__).parents[2] / "examples" / "agent_runs.jsonl"
EXTRA = "pip install 'tracegrade[openai]'"


def without_openai(code: str, folder: Path) -> Any:
    """Run ``code`` in ``folder`` where ``openai`` cannot be imported (see
    :func:`tests.blocked_imports.run_without`)."""
    return run_without("openai", code, folder)


def test_the_command_line_and_the_api_work_without_the_sdk(tmp_path: Path) -> None:
    (tmp_path / "chat.json").write_text(
        '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]'
    )
    found = without_openai(
        f"""
        import contextlib, io, json
        import tracegrade, tracegrade.pytest_plugin, tracegrade.testing
        from tracegrade.cli import main

        def run(*arguments):
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    return main(list(arguments))
                except SystemExit as stop:
                    return stop.code

        codes = {{
            "help": run("--help"),
            "evaluate": run("evaluate", {str(EXAMPLE)!r}, "-m", "tool_call_f1", "--out", "a.jsonl"),
            "report": run("report", "a.jsonl", "--html", "a.html"),
            "compare": run("compare", "a.jsonl", "a.jsonl"),
            "convert": run("convert", "--from", "openai", "chat.json", "chat.jsonl"),
        }}
        result = tracegrade.evaluate({str(EXAMPLE)!r}, metrics=[tracegrade.ToolCallAccuracy()])
        print(json.dumps({{
            "codes": codes,
            "scored": len(result.rows),
            "judge loaded": [name for name in sys.modules if name.startswith("tracegrade.judge.")],
        }}))
        """,
        tmp_path,
    )
    assert found["codes"] == dict.fromkeys(["help", "evaluate", "report", "compare", "convert"], 0)
    assert found["scored"] == 10
    assert found["judge loaded"] == []


def test_the_openai_judge_names_the_extra_to_install(tmp_path: Path) -> None:
    found = without_openai(
        f"""
        import contextlib, io, json
        from tracegrade.cli import main
        from tracegrade.judge import JudgeError, OpenAIJudge

        try:
            OpenAIJudge("judge-model", base_url="http://127.0.0.1:9/v1", cache=False)
        except ImportError as error:
            made = [str(error), isinstance(error, JudgeError)]
        else:
            made = None
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            code = main([
                "evaluate", {str(EXAMPLE)!r}, "-m", "agent_goal_accuracy_without_reference",
                "--judge-model", "judge-model", "--judge-base-url", "http://127.0.0.1:9/v1",
            ])
        print(json.dumps({{"made": made, "code": code, "stderr": stderr.getvalue()}}))
        """,
        tmp_path,
    )
    assert found["made"] == [
        f"the OpenAI-compatible judge needs the openai package: {EXTRA}",
        True,
    ]
    assert found["code"] == 2
    assert EXTRA in found["stderr"]
    assert "--judge-model" not in found["stderr"]  # no flag mends a missing extra
