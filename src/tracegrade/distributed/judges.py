"""The judged metrics as a distributed run sends them to its workers.

Each task carries the metrics pickled; a :class:`~tracegrade.judge.chat.ChatJudge` (any
provider's: OpenAI, Anthropic, Bedrock, Gemini) travels as its settings and is rebuilt
once per worker process (and per settings), so every task on that worker shares one
judge: its HTTP connections, its cache connection and its limit on requests in flight
(see :mod:`tracegrade.judge.settings` for what travels and what each worker reads from
its own environment).

That limit is the run's per-worker concurrency: the judge a worker builds lets exactly
as many requests be in flight as ``evaluate_distributed``'s ``concurrency`` (after
``total_concurrency`` divided it among the workers), however many tasks the worker runs
at once and however many judged metrics ask about each sample. The judge's own
``max_concurrency``, a one-process setting, is replaced there, never added to.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from ..judge.chat import ChatJudge
from ..judge.providers import default_judge
from ..metrics.base import Metric
from ..metrics.judged import JudgeAsking, asks_judge


def for_workers(metrics: Sequence[Metric], concurrency: int) -> list[Metric]:
    """``metrics`` to send to the workers: each judged metric whose judge is a
    ChatJudge (its ``llm``, or the environment's default judge here on the client when
    it has none, so that the workers ask the judge the run record names) as a shallow
    copy holding that judge limited to ``concurrency`` requests in flight; every other
    metric (and a judged metric with a judge of its own kind) as it is. The metrics
    given are not changed."""
    shipped: list[Metric] = []
    for metric in metrics:
        judge = _openai_judge(metric) if asks_judge(metric) else None
        if judge is None:
            shipped.append(metric)
            continue
        twin = copy.copy(metric)
        assert isinstance(twin, JudgeAsking)
        twin.llm = judge.with_concurrency(concurrency)
        shipped.append(twin)
    return shipped


def _openai_judge(metric: JudgeAsking) -> ChatJudge | None:
    """The metric's ChatJudge: its ``llm``, or the default judge when it has none and
    one is configured (without one, the metric fails on every sample, on a worker as on
    one machine)."""
    if metric.llm is None:
        try:
            return default_judge()
        except Exception:
            return None
    return metric.llm if isinstance(metric.llm, ChatJudge) else None
