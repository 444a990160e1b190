"""Scoring a tool-call metric whose ``matching`` holds a semantic argument rule.

:class:`SemanticArguments` is a base of the metrics that compare calls with a reference
(tool_call_f1, tool_call_accuracy, tool_correctness, trajectory_match). Without a
semantic rule nothing changes: ``score()`` is the metric's own, synchronous and
judge-free, and the runner scores it inline. With one, the metric asks the judge
(:meth:`~tracegrade.metrics.judged.JudgeAsking.asks_judge` is true) and ``ascore``:

1. scores the sample with an empty :class:`~tracegrade.metrics.semantic.Verdicts`
   table, which collects every (expected, actual) pair a semantic rule meets (each
   scoring 0.0 meanwhile, so no comparison that could turn out otherwise is skipped);
2. asks the judge about all of them in one request (the ``argument_equivalence``
   prompt), through the judge's cache like every judgement;
3. scores the sample again with the verdicts: the deterministic scoring decides, the
   judge only says which values are the same.

Should the second pass meet a pair the first did not (a metric whose comparisons depend
on earlier verdicts), the judge is asked about those too, up to :data:`MAX_ROUNDS`
requests in all. A sample without a pair under the rule makes no request.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from ..model.results import Usage
from .judged import JudgeAsking
from .semantic import Pair, Verdict, Verdicts, canonical, verdicts_in_force

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ..judge.base import JudgeRequest
    from ..model.results import Score
    from ..model.samples import Sample
    from .matching import CallMatcher

PROMPT = "argument_equivalence"
MAX_ROUNDS = 3
"""The most judge requests one sample's semantic pairs may take (one, but for a metric
whose comparisons depend on earlier verdicts)."""


class SemanticArguments(JudgeAsking):
    """A metric comparing tool calls by ``matching``, which may hold semantic rules."""

    matching: CallMatcher | None

    def asks_judge(self) -> bool:
        """Whether ``matching`` holds a semantic (judged) argument rule."""
        check = getattr(self.matching, "asks_judge", None)
        return bool(check()) if callable(check) else False

    async def ascore(self, sample: Sample | None = None, **fields: Any) -> Score:
        """Score one sample; with a semantic rule, asking the judge once for all of the
        sample's pairs (see the module)."""
        if not self.asks_judge():
            plain = cast("Any", super()).ascore
            return cast("Score", await plain(sample, **fields))
        if sample is None or fields:
            sample = cast("Any", self).from_fields(sample, fields)
        assert sample is not None
        return await self._judged_score(sample)

    async def _judged_score(self, sample: Sample) -> Score:
        from ..judge.base import JudgeError  # the judge loads only where it is asked

        table = Verdicts()
        judged: list[tuple[Pair, Verdict]] = []
        usage = Usage()
        requests = 0
        while True:
            table.new = {}
            with verdicts_in_force(table):
                score = self.score(sample)
            if not table.new:
                break
            if requests >= MAX_ROUNDS:
                raise JudgeError(
                    f"{self.name}: new argument pairs kept appearing after {MAX_ROUNDS} "
                    "judge requests",
                    usage,
                )
            pairs = list(table.new.values())
            try:
                verdicts, spent = await self._ask_about(pairs)
            except JudgeError as error:
                error.usage = usage + error.usage
                raise
            usage = usage + spent
            for pair, verdict in zip(pairs, verdicts, strict=True):
                table.known[pair.key()] = verdict
                judged.append((pair, verdict))
            requests += 1
        return _with_verdicts(score, judged, requests, usage)

    async def _ask_about(self, pairs: Sequence[Pair]) -> tuple[list[Verdict], Usage]:
        """The judge's verdict on each of ``pairs``, in order, and what asking cost;
        JudgeError naming the pair when the answer leaves one out or repeats it."""
        from ..judge.base import JudgeError

        answer = await self.ask(equivalence_request(pairs))
        found: dict[int, Verdict] = {}
        for item in answer.data["verdicts"]:
            number = int(item["pair"])
            if number in found:
                raise JudgeError(
                    f"{self.name}: the judge answered twice about pair {number} "
                    f"({_shown(pairs[number - 1])})",
                    answer.usage,
                )
            found[number] = Verdict(bool(item["same"]), str(item["reason"]))
        for number, pair in enumerate(pairs, 1):
            if number not in found:
                raise JudgeError(
                    f"{self.name}: the judge gave no verdict on pair {number} ({_shown(pair)})",
                    answer.usage,
                )
        return [found[number] for number in range(1, len(pairs) + 1)], answer.usage


def _shown(pair: Pair) -> str:
    return (
        f"{pair.tool} {pair.argument}: {canonical(pair.actual)} against {canonical(pair.expected)}"
    )


def render_pairs(pairs: Sequence[Pair]) -> str:
    """The pairs as the prompt shows them: numbered, each with its tool, argument, both
    values as JSON and any guidance."""
    blocks = []
    for number, pair in enumerate(pairs, 1):
        lines = [
            f"Pair {number}",
            f"Tool: {pair.tool}",
            f"Argument: {pair.argument}",
            f"Reference value: {canonical(pair.expected)}",
            f"Agent's value: {canonical(pair.actual)}",
        ]
        if pair.instructions:
            lines.append(f"Guidance: {pair.instructions}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def equivalence_request(pairs: Sequence[Pair]) -> JudgeRequest:
    """The one request asking the judge about every pair of a sample, its schema
    narrowed to exactly these pair numbers."""
    from ..judge.templates import load_prompt

    prompt = load_prompt(PROMPT)
    return prompt.request({"pairs": render_pairs(pairs)}, schema=_schema(prompt.schema, len(pairs)))


def _schema(schema: Mapping[str, Any], count: int) -> dict[str, Any]:
    verdicts = schema["properties"]["verdicts"]
    item = verdicts["items"]
    numbered = {**item["properties"]["pair"], "enum": list(range(1, count + 1))}
    narrowed_item = {**item, "properties": {**item["properties"], "pair": numbered}}
    narrowed = {**verdicts, "items": narrowed_item, "minItems": count, "maxItems": count}
    return {**schema, "properties": {**schema["properties"], "verdicts": narrowed}}


def _with_verdicts(
    score: Score, judged: list[tuple[Pair, Verdict]], requests: int, usage: Usage
) -> Score:
    """``score`` with the judge's verdicts in its details and what asking cost."""
    from ..judge.templates import load_prompt

    prompt = load_prompt(PROMPT)
    details = {
        **score.details,
        "semantic": {
            "judge_requests": requests,
            "pairs": [
                {
                    "tool": pair.tool,
                    "argument": pair.argument,
                    "reference": pair.expected,
                    "predicted": pair.actual,
                    "same": verdict.same,
                    "reason": verdict.reason,
                }
                for pair, verdict in judged
            ],
            "prompt": {"name": prompt.name, "version": prompt.version},
        },
    }
    return replace(score, details=details, usage=usage)
