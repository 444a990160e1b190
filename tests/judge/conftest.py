"""The scripted judge server and a judge pointed at it. Other test folders can reuse the
server with ``from tests.judge.server import judge_env, judge_server  # noqa: F401``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, judge_env, judge_server

from tracegrade.judge import OpenAIJudge

__all__ = ["judge_env", "judge_server"]

SECRET = "sk-test-SECRET-123"


class Sleeps(list[float]):
    """Records the waits a judge asks for, without waiting."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture(autouse=True)
def _isolated(judge_env: pytest.MonkeyPatch) -> None:
    """Every judge test runs without the developer's judge settings."""


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make_judge(
    judge_server: JudgeServer, sleeps: Sleeps, tmp_path: Path
) -> Callable[..., OpenAIJudge]:
    """An OpenAIJudge on the test server: the fake secret key, tiny backoffs, recorded
    sleeps and no cache unless asked for."""

    def make(**options: Any) -> OpenAIJudge:
        settings: dict[str, Any] = {
            "model": "test-judge",
            "base_url": judge_server.url,
            "api_key": SECRET,
            "timeout": 5.0,
            "max_attempts": 3,
            "backoff": 0.01,
            "max_backoff": 0.05,
            "cache": False,
            "sleep": sleeps,
        }
        settings.update(options)
        return OpenAIJudge(**settings)

    return make
