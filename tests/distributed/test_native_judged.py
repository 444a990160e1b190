"""The Bedrock and Gemini judges on a real LocalCluster (2 worker processes), asking
stand-in servers speaking Converse and generateContent on 127.0.0.1: topic_adherence and
trajectory_judge give the rows and usage of one machine, with 429 and 5xx replies
retried and counted, the judge rebuilt on each worker as the provider's judge (Bedrock's
fake AWS credentials and region from the workers' own environment), and a rerun
answered from the cache the workers share."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.distributed.test_judged import MARKER, _dataset, _rows, _values
from tests.judge.providers import AWS_ACCESS_KEY, AWS_SECRET_KEY, as_chat_body, aws_env
from tests.judge.server import JudgeServer, Reply, judge_env
from tests.metrics.judges import sensible_answer
from tests.test_native_judged_run import PROVIDERS

from tracegrade import Metric, TopicAdherenceScore, TrajectoryJudge, evaluate
from tracegrade.distributed import evaluate_distributed
from tracegrade.judge.chat import ChatJudge
from tracegrade.judge.providers import make_judge

__all__ = ["aws_env", "judge_env"]

WORKER_ENV = {
    # what boto3 reads on a worker: fake keys and a region, no files of the developer's
    "AWS_ACCESS_KEY_ID": AWS_ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": AWS_SECRET_KEY,
    "AWS_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """Two worker processes whose environment holds :data:`WORKER_ENV` (the nanny sets
    it before each worker starts)."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        env=WORKER_ENV,
    ) as started:
        yield started


@pytest.fixture(params=sorted(PROVIDERS))
def provider(
    request: pytest.FixtureRequest,
    judge_env: pytest.MonkeyPatch,
    aws_env: pytest.MonkeyPatch,
) -> str:
    return str(request.param)


class Flaky:
    """Answers sensibly, except: the first time each question about sample 5 arrives, with
    the provider's 429, and about sample 10 with its 503; about the sample marked
    :data:`MARKER`, with its 500 every time. Per question, so the faults fall on the same
    rows wherever they are scored; :meth:`reset` before each run."""

    def __init__(self, provider: str) -> None:
        _, rate_limited, fault = PROVIDERS[provider]
        self.once = {"course number 5 ": rate_limited(429), "course number 10 ": fault(503)}
        self.failing = fault(500)
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def reset(self) -> None:
        with self.lock:
            self.seen.clear()

    def __call__(self, body: Mapping[str, Any]) -> Reply | dict[str, Any]:
        text = json.dumps(body, sort_keys=True)
        if MARKER in text:
            return self.failing
        for marker, reply in self.once.items():
            if marker in text:
                with self.lock:
                    first = text not in self.seen
                    self.seen.add(text)
                if first:
                    return reply
        return sensible_answer(as_chat_body(body))


def _metrics(judge: ChatJudge) -> list[Metric]:
    return [TopicAdherenceScore(llm=judge), TrajectoryJudge(llm=judge)]


def test_on_a_cluster_as_on_one_machine_then_from_the_shared_cache(
    client: Any, provider: str, tmp_path: Path
) -> None:
    with JudgeServer(PROVIDERS[provider][0]) as server:
        flaky = Flaky(provider)
        server.respond(flaky)
        data = _dataset(tmp_path / "runs.jsonl", 20, failing={3}, malformed=False)

        def judge(cache: Path | bool) -> ChatJudge:
            return make_judge(
                provider,
                "test-judge",
                base_url=server.url,
                cache=cache,
                timeout=5.0,
                max_attempts=2,
                backoff=0.001,
                max_backoff=0.001,
            )

        single = evaluate(
            data, _metrics(judge(False)), out=tmp_path / "single.jsonl", progress=False
        )
        asked_once = server.count
        # 19 samples x 2 metrics; the failing one's 2 x 2 attempts; a fault retried for
        # each of the 2 questions about samples 5 and 10
        assert asked_once == 38 + 4 + 4
        assert single.usage is not None
        assert single.usage.requests == asked_once
        assert (single.usage.input_tokens, single.usage.output_tokens) == (380, 190)
        assert single.summary()["trajectory_judge"].failed == 1

        flaky.reset()
        spread = evaluate_distributed(
            data,
            _metrics(judge(False)),
            client=client,
            out=tmp_path / "spread.jsonl",
            partition_bytes=4096,
        )
        assert spread.run_facts["distributed"]["partitions"] > 1
        assert server.count == 2 * asked_once
        assert _rows(tmp_path / "spread.jsonl") == _rows(tmp_path / "single.jsonl")
        assert spread.usage == single.usage
        # every request in the provider's protocol, from the workers' judges too
        assert all(PROVIDERS[provider][0].serves(r.path) for r in server.requests)

        flaky.reset()
        cache = tmp_path / "judge.sqlite"
        first = evaluate_distributed(
            data, _metrics(judge(cache)), client=client, out=tmp_path / "first.jsonl"
        )
        asked = server.count
        assert asked == 3 * asked_once
        again = evaluate_distributed(
            data, _metrics(judge(cache)), client=client, out=tmp_path / "again.jsonl"
        )
        # only the failing sample's questions are asked again (2 metrics x 2 attempts):
        # a failed judgement is never cached; the other 38 answers are
        assert server.count == asked + 4
        assert first.usage is not None and again.usage is not None
        assert (again.usage.requests, again.usage.cached) == (4, 38)
        assert _values(tmp_path / "again.jsonl") == _values(tmp_path / "first.jsonl")
