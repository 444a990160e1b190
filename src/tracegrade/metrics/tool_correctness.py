"""ToolCorrectnessMetric: did the agent call the expected tools, told apart by name and
type, as deepeval's metric of that name does.

Its comparison rules live in :mod:`tracegrade.metrics.matching`; see
``docs/semantics.md`` for where it differs from deepeval and eval_lib.
"""

from __future__ import annotations

from typing import Any

from ..errors import MissingFieldError
from ..model.messages import ToolCall, ToolCallType
from ..model.results import Score
from ..model.samples import EvalTestCase, MultiTurnSample, Sample
from .agents import for_agent
from .base import Metric
from .call_lists import name_counts, name_list, names_beyond, shared_and_beyond
from .matching import (
    CallMatcher,
    best_nonzero_pairing,
    checked_matcher,
    common_subsequence,
    describe_failed_arguments,
)
from .semantic_judge import SemanticArguments
from .turns import has_turn_references, score_by_turn

# ToolCorrectnessMetric tells tools apart by name and type, as deepeval does: an MCP tool
# is not the function of the same name. An MCP tool's key is its name marked " (MCP)"; a
# function's (``type`` None or FUNCTION, or a tool given by name) is its name alone.
_MCP_MARK = " (MCP)"


def _tool_key(tool: str | ToolCall) -> str:
    """The name ToolCorrectnessMetric knows ``tool`` by: marked when it is an MCP tool."""
    if isinstance(tool, str):
        return tool
    return tool.name if tool.type is not ToolCallType.MCP else tool.name + _MCP_MARK


def _type_of(key: str) -> tuple[str, str]:
    """A tool key as (name, type)."""
    if key.endswith(_MCP_MARK):
        return key[: -len(_MCP_MARK)], "MCP"
    return key, "FUNCTION"


def _type_mismatches(missing: list[str], extra: list[str]) -> list[str]:
    """Each missing tool that was called with the other type instead, as
    ``name (expected FUNCTION, called MCP)``; each extra call explains one at most."""
    if not any(key.endswith(_MCP_MARK) for key in missing + extra):
        return []
    unexplained = [_type_of(key) for key in extra]
    found = []
    for key in missing:
        name, wanted = _type_of(key)
        for other in unexplained:
            if other[0] == name:
                unexplained.remove(other)
                found.append(f"{name} (expected {wanted}, called {other[1]})")
                break
    return found


def _pair_tools(
    called: list[str | ToolCall], expected: list[str | ToolCall], matching: CallMatcher
) -> list[tuple[int, int]]:
    """``(expected, called)`` index pairs of tools with the same key, paired to maximise
    the total argument score (a tool given by name counts in full)."""
    groups: dict[str, tuple[list[int], list[int]]] = {}
    for index, tool in enumerate(expected):
        groups.setdefault(_tool_key(tool), ([], []))[0].append(index)
    for index, tool in enumerate(called):
        groups.setdefault(_tool_key(tool), ([], []))[1].append(index)
    pairs = []
    for expected_indices, called_indices in groups.values():
        if not expected_indices or not called_indices:
            continue
        scores = [
            [_tool_credit(called[c], expected[e], matching) for c in called_indices]
            for e in expected_indices
        ]
        # Every same-key pair counts for the name: shift the scores so none is dropped as 0.
        square = best_nonzero_pairing([[score + 1.0 for score in row] for row in scores])
        pairs += [(expected_indices[row], called_indices[column]) for row, column in square]
    return sorted(pairs)


def _tool_credit(called: str | ToolCall, expected: str | ToolCall, matching: CallMatcher) -> float:
    if isinstance(called, str) or isinstance(expected, str):
        return 1.0
    return matching.score(called, expected)[0]


class ToolCorrectnessMetric(SemanticArguments, Metric):
    """Did the agent call the expected tools? Compared by tool name and type.

    An MCP tool (``ToolCall.type``) is not the function of the same name, as in deepeval.

    Default: the fraction of expected tools that were called (each call used once;
    extra calls are not penalised). ``exact_match``: 1.0 only for the same tools with the
    same counts (and, with ``check_ordering``, in the same order), else 0.0.
    ``check_ordering`` alone: the longest common subsequence of expected and called
    tools over the number expected. No expected tools: 1.0 if none were called, else 0.0.

    ``details`` list the names ``matched``, ``missing``, ``extra`` (and ``out_of_order``
    with ``check_ordering``), not the input's own name lists; an MCP tool's name is marked
    ``" (MCP)"`` there, and ``type_mismatches`` names each missing tool called with the
    other type instead.

    ``matching`` (a :class:`~tracegrade.metrics.matching.CallMatcher`, such as
    :class:`~tracegrade.metrics.arguments.ArgumentMatch`) also checks the arguments, as
    deepeval's input-parameter check does: each matched expected tool earns its argument
    score instead of full credit (same-name tools paired to maximise it; with
    ``check_ordering`` the in-order pairs), and with ``exact_match`` every pair must be the
    same call. A tool given by name only, on either side, earns full credit for the name.
    ``details["arguments"]`` gives each pair compared: positions, name, score, verdicts.
    Reference calls given per turn score each turn on its own (see
    :mod:`tracegrade.metrics.turns`).
    ``agent``: score that agent's calls only, in a multi-agent conversation (see
    :mod:`tracegrade.metrics.agents`).
    """

    name = "tool_correctness"
    sample_types = (EvalTestCase, MultiTurnSample)

    def __init__(
        self,
        threshold: float = 0.5,
        exact_match: bool = False,
        check_ordering: bool = False,
        *,
        matching: CallMatcher | None = None,
        agent: str | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name, threshold=threshold)
        self.exact_match = exact_match
        self.check_ordering = check_ordering
        self.matching = checked_matcher(matching)
        self.agent = agent

    def _tool_lists(self, sample: Sample) -> tuple[list[str], list[str]]:
        self.check(sample)
        if isinstance(sample, EvalTestCase):
            self.require(sample, "tools_called", "expected_tools")
            assert sample.tools_called is not None and sample.expected_tools is not None
            called = [_tool_key(tool) for tool in sample.tools_called]
            return called, [_tool_key(tool) for tool in sample.expected_tools]
        conversation = sample
        assert isinstance(conversation, MultiTurnSample)  # as checked
        self.require(conversation, "reference_tool_calls")
        assert conversation.reference_tool_calls is not None
        called = [
            call.name if call.type is None else _tool_key(call)
            for call in conversation.predicted_tool_calls()
        ]
        reference = conversation.reference_tool_calls
        return called, [call.name if call.type is None else _tool_key(call) for call in reference]

    def score(self, sample: Sample) -> Score:
        sample = for_agent(self.agent, sample)
        try:
            called, expected = self._tool_lists(sample)
        except MissingFieldError:
            if not has_turn_references(sample):
                raise
            return score_by_turn(self, sample)
        called_counts, expected_counts = name_counts(called), name_counts(expected)
        matched, extra = shared_and_beyond(called_counts, expected_counts)
        details: dict[str, Any] = {
            "mode": self._mode(),
            "matched": matched,
            "missing": names_beyond(expected_counts, called_counts),
            "extra": extra,
        }
        mismatches = _type_mismatches(details["missing"], extra)
        if mismatches:
            details["type_mismatches"] = mismatches
        if not expected:
            value = 0.0 if called else 1.0
            reason = (
                f"no tools were expected but the agent called {name_list(called)}"
                if called
                else "no tools were expected and none were called"
            )
            return self.result(value, reason, details)
        if self.check_ordering:
            sequence = common_subsequence(expected, called)
            in_order = name_counts([expected[i] for i, _ in sequence])
            details["out_of_order"] = names_beyond(name_counts(matched), in_order)
        if self.exact_match:
            same = called == expected if self.check_ordering else called_counts == expected_counts
            value = 1.0 if same else 0.0
        elif self.check_ordering:
            value = len(sequence) / len(expected)
        else:
            value = len(matched) / len(expected)
        if self.matching is not None:
            ordered = sequence if self.check_ordering else None
            keys = (expected, called)
            return self._score_arguments(sample, value, ordered, keys, self.matching, details)
        return self.result(value, self._reason(value, expected, called, details), details)

    def _score_arguments(
        self,
        sample: Sample,
        value: float,
        ordered: list[tuple[int, int]] | None,
        keys: tuple[list[str], list[str]],
        matching: CallMatcher,
        details: dict[str, Any],
    ) -> Score:
        """The score with each matched expected tool weighted by its argument score (full
        credit for a tool given by name only); ``ordered``: the in-order pairs, if any."""
        called, expected = self._tool_items(sample)
        if ordered is None:
            ordered = _pair_tools(called, expected, matching)
        compared = []
        credit = 0.0
        every_same = True
        for expected_index, called_index in ordered:
            want, got = expected[expected_index], called[called_index]
            if isinstance(want, str) or isinstance(got, str):
                credit += 1.0
                continue
            score, arguments, extra = matching.score(got, want)
            credit += score
            every_same = every_same and matching.same(got, want)
            entry: dict[str, Any] = {
                "expected": expected_index,
                "called": called_index,
                "name": want.name,
                "score": score,
                "arguments": arguments,
            }
            if extra:
                entry["extra_arguments"] = extra
            compared.append(entry)
        details["arguments"] = compared
        if self.exact_match and value == 1.0 and not every_same:
            value = 0.0
            reason = "the expected tools were called, but not all with the expected arguments"
        else:
            if expected and not self.exact_match:
                value = credit / len(expected)
            reason = self._reason(value, *keys, details)
            if compared and not self.exact_match:
                reason += f"; weighted by argument scores: {value:.4g}"
        for entry in [entry for entry in compared if entry["score"] < 1.0][:3]:
            failed = describe_failed_arguments(entry["arguments"], entry.get("extra_arguments", []))
            reason += f"; {entry['name']} arguments {entry['score']:.3g}: {failed}"
        return self.result(value, reason, details)

    def _tool_items(self, sample: Sample) -> tuple[list[str | ToolCall], list[str | ToolCall]]:
        """The called and expected tools as given (names or calls), already checked."""
        if isinstance(sample, EvalTestCase):
            assert sample.tools_called is not None and sample.expected_tools is not None
            return list(sample.tools_called), list(sample.expected_tools)
        assert isinstance(sample, MultiTurnSample) and sample.reference_tool_calls is not None
        return list(sample.predicted_tool_calls()), list(sample.reference_tool_calls)

    def _mode(self) -> str:
        if self.exact_match:
            return "exact, ordered" if self.check_ordering else "exact"
        return "ordered" if self.check_ordering else "non-exact"

    def _reason(
        self, value: float, expected: list[str], called: list[str], details: dict[str, Any]
    ) -> str:
        if self.exact_match and value == 1.0:
            return f"the agent called exactly the expected tools ({name_list(expected)})"
        if self.exact_match:
            head = "the called tools are not exactly the expected ones"
        elif self.check_ordering:
            head = (
                f"{round(value * len(expected))} of {len(expected)} expected tools were called "
                "in the expected order"
            )
        else:
            head = f"{len(details['matched'])} of {len(expected)} expected tools were called"
        notes = [head]
        if details["missing"]:
            notes.append(f"missing: {name_list(details['missing'])}")
        if details["extra"]:
            notes.append(f"extra: {name_list(details['extra'])}")
        if details.get("out_of_order"):
            notes.append(f"out of order: {name_list(details['out_of_order'])}")
        if details.get("type_mismatches"):
            notes.append(f"tool type mismatches: {name_list(details['type_mismatches'])}")
        if self.exact_match and self.check_ordering and len(notes) == 1:
            notes[0] = "the expected tools were called, but in another order"
            notes.append(f"expected {name_list(expected)}; called {name_list(called)}")
        return "; ".join(notes)
