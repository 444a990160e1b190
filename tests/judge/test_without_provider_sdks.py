"""Without the ``bedrock`` or ``gemini`` extra: the transport says which extra to install.

Each test runs a fresh interpreter in which the SDK cannot be imported (None in
``sys.modules``), as if the package were not installed."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.blocked_imports import run_without

MADE = """
import json
from tracegrade.judge import JudgeError
from tracegrade.judge.{module} import {transport}

try:
    {transport}("judge-model", timeout=1.0, {options})
except ImportError as error:
    print(json.dumps([str(error), isinstance(error, JudgeError)]))
else:
    print(json.dumps(None))
"""


@pytest.mark.parametrize(
    ("blocked", "module", "transport", "options", "said"),
    [
        (
            "boto3",
            "bedrock",
            "BedrockTransport",
            "region='us-east-1'",
            "the Bedrock judge needs the boto3 package: pip install 'tracegrade[bedrock]'",
        ),
        (
            "google.genai",
            "gemini",
            "GeminiTransport",
            "api_key='k'",
            "the Gemini judge needs the google-genai package: pip install 'tracegrade[gemini]'",
        ),
    ],
)
def test_a_missing_sdk_names_the_extra(
    tmp_path: Path, blocked: str, module: str, transport: str, options: str, said: str
) -> None:
    code = MADE.format(module=module, transport=transport, options=options)
    assert run_without(blocked, code, tmp_path) == [said, True]
