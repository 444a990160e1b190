"""The push journal against what a results file holds now: a rerun that rewrites the
results (``evaluate --out`` without ``--resume``, the same row indices, other traces or
other scores) has its scores pushed; only rows whose scores were taken before are not."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import tracegrade
from tracegrade.backends import PullFilters, PushedScore, PushOutcome, parse_address
from tracegrade.model.origin import Origin
from tracegrade.model.results import SampleResult, Score


class Recorder:
    """A backend client that takes every score (the push's own logic is under test)."""

    def __init__(self) -> None:
        self.address = parse_address("otlp://127.0.0.1:9/")
        self.taken: list[tuple[object, str, float | None]] = []

    def pull(self, filters: PullFilters, skipped: Any) -> Iterator[Any]:
        raise NotImplementedError

    def dataset_references(self, name: str) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def push(self, scores: Sequence[PushedScore]) -> PushOutcome:
        self.taken.extend((score.sample_id, score.metric, score.value) for score in scores)
        return PushOutcome(created=len(scores))

    def close(self) -> None:
        pass


def _row(index: int, trace: str, value: float) -> SampleResult:
    origin = Origin(system="otlp", trace_ids=(trace,), root_ids=("0" * 15 + "1",))
    return SampleResult(index, trace, {"exact_match": Score(value, "why")}, origin=origin)


def _write(path: Path, rows: list[SampleResult]) -> None:
    path.write_text("".join(json.dumps(row.to_dict()) + "\n" for row in rows))


def test_a_rewritten_results_file_is_pushed_and_an_unchanged_one_is_not(tmp_path: Path) -> None:
    results = tmp_path / "run.jsonl"
    backend = Recorder()
    _write(results, [_row(0, "a" * 32, 1.0), _row(1, "b" * 32, 0.0)])
    assert tracegrade.push(results, backend).scores == 2

    # the next day's run writes the same file anew: rows 0 and 1 are other traces,
    # or the same trace scored anew; each must reach the backend
    _write(results, [_row(0, "c" * 32, 1.0), _row(1, "b" * 32, 0.5)])
    summary = tracegrade.push(results, backend)
    assert (summary.scores, summary.already) == (2, 0)
    assert backend.taken[2:] == [("c" * 32, "exact_match", 1.0), ("b" * 32, "exact_match", 0.5)]

    # nothing changed since: nothing is sent again
    unchanged = tracegrade.push(results, backend)
    assert (unchanged.scores, unchanged.already) == (0, 2)
