"""Criteria: a user's own criteria, in plain language or as a rubric of levels, judged.

One judge call per sample. The judge reads the criteria, the levels it may choose from
(lowest first, each with its meaning), and the fields of the sample the metric shows it
(the conversation as a transcript with numbered steps, from
:mod:`tracegrade.judge.transcripts`, within its default budget; the ``reference`` when
the sample has one), and answers with a level and a reason. The level becomes a value in
0..1:

- plain criteria: ``pass`` is 1.0, ``fail`` 0.0;
- a rubric of numbered levels (``{1: "...", 5: "..."}``): (level - lowest) / (highest -
  lowest), so 4 on 1..5 is 0.75;
- a rubric of named levels (``{"poor": "...", "fair": "...", "good": "..."}``, lowest
  first): the level's position over the last position, so ``fair`` is 0.5.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..model.samples import MultiTurnSample, Sample
from .judged import JudgedMetric

if TYPE_CHECKING:
    from ..judge.base import Judge
    from ..model.results import Score

PROMPT = "criteria"
FIELDS = ("conversation", "reference", "reference_tool_calls")
"""The sample fields the judge may be shown, in the order they are shown."""
_SAMPLE_FIELD = {
    "conversation": "user_input",
    "reference": "reference",
    "reference_tool_calls": "reference_tool_calls",
}
_HEADINGS = {
    "conversation": "Transcript of the conversation",
    "reference": "Reference",
    "reference_tool_calls": "Reference tool calls, in order",
}
PASS_FAIL: dict[str | int, str] = {
    "fail": "the conversation does not meet the criteria",
    "pass": "the conversation meets the criteria",
}
"""The levels of plain criteria, lowest first."""
_WHOLE = re.compile(r"-?[0-9]+")


class Rubric:
    """The levels a criterion is graded on, lowest first, each with what it means.

    Built from a mapping of level to meaning: every key a whole number (an ``int`` or
    text such as ``"3"``, as TOML writes table keys) makes numbered levels, sorted by
    number; every key a name makes named levels, in the order given. ``str()`` is the
    rubric as compact JSON, which :class:`Criteria` reads back (the run record shows it).
    """

    def __init__(self, levels: Mapping[Any, Any] | Rubric) -> None:
        if isinstance(levels, Rubric):
            self.levels: tuple[tuple[str | int, str], ...] = levels.levels
            self.numbered: bool = levels.numbered
            return
        if not isinstance(levels, Mapping):
            raise TypeError(
                "rubric must be a mapping of level to its meaning, e.g. "
                f"{{1: 'rude', 3: 'neutral', 5: 'warm'}}; got {type(levels).__name__}"
            )
        if len(levels) < 2:
            raise ValueError(f"rubric needs at least two levels, got {len(levels)}")
        keys = list(levels)
        whole = [_whole(key) for key in keys]
        self.numbered = all(number is not None for number in whole)
        if not self.numbered and any(number is not None for number in whole):
            raise ValueError(
                "rubric levels must all be whole numbers or all be names, not a mix: "
                + ", ".join(repr(key) for key in keys)
            )
        pairs: list[tuple[str | int, str]] = []
        for key, number in zip(keys, whole, strict=True):
            meaning = levels[key]
            if not isinstance(meaning, str) or not meaning.strip():
                raise ValueError(f"rubric level {key!r}: its meaning must be non-empty text")
            if number is None and (not isinstance(key, str) or not key.strip()):
                raise ValueError(f"rubric level {key!r}: a level is a whole number or a name")
            pairs.append((key.strip() if number is None else number, meaning.strip()))
        labels = [label for label, _ in pairs]
        repeated = sorted({str(label) for label in labels if labels.count(label) > 1})
        if repeated:
            raise ValueError(f"rubric repeats the level(s) {', '.join(repeated)}")
        if self.numbered:
            pairs.sort(key=lambda pair: pair[0])
        self.levels = tuple(pairs)

    @property
    def labels(self) -> list[str | int]:
        """The levels, lowest first."""
        return [label for label, _ in self.levels]

    def value(self, level: str | int) -> float:
        """``level`` as a value in 0..1 (see the module's docstring); ValueError for a
        level that is not one of these."""
        labels = self.labels
        if level not in labels or isinstance(level, bool):
            raise ValueError(f"{level!r} is not one of the levels {labels}")
        if self.numbered:
            assert isinstance(level, int)
            low, high = labels[0], labels[-1]
            assert isinstance(low, int) and isinstance(high, int)
            return (level - low) / (high - low)
        return labels.index(level) / (len(labels) - 1)

    def text(self) -> str:
        """The levels as the prompt lists them: ``- LEVEL: meaning``, one a line."""
        return "\n".join(f"- {label}: {meaning}" for label, meaning in self.levels)

    def schema(self) -> dict[str, Any]:
        """The answer's JSON schema, ``level`` narrowed to these levels."""
        from ..judge.templates import load_prompt

        schema: dict[str, Any] = dict(load_prompt(PROMPT).schema)
        kind = "integer" if self.numbered else "string"
        properties = dict(schema["properties"])
        properties["level"] = {"type": kind, "enum": self.labels}
        schema["properties"] = properties
        return schema

    def __str__(self) -> str:
        from .._json import dumps

        return dumps({str(label): meaning for label, meaning in self.levels}).decode()

    def __repr__(self) -> str:
        return f"Rubric({self!s})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rubric) and other.levels == self.levels

    def __hash__(self) -> int:
        return hash(self.levels)


def _whole(key: Any) -> int | None:
    """``key`` as a whole number when it is one (``3``, ``"3"``), else None."""
    if isinstance(key, bool):
        return None
    if isinstance(key, int):
        return key
    if isinstance(key, str) and _WHOLE.fullmatch(key.strip()):
        return int(key)
    return None


class Shown(tuple[str, ...]):
    """The sample fields shown to the judge; ``str()`` joins them with ``|``, as the
    command line writes them (``include=conversation|reference``)."""

    __slots__ = ()

    def __str__(self) -> str:
        return "|".join(self)

    def __repr__(self) -> str:  # as typed: 'tracegrade metrics' lists defaults by repr
        return repr(str(self))


DEFAULT_INCLUDE = Shown(("conversation", "reference"))
"""What the judge sees unless told otherwise: the conversation, and the reference when
the sample has one."""


def shown_fields(include: str | Iterable[str]) -> Shown:
    """``include`` checked: a non-empty list of :data:`FIELDS` without repeats (text is
    split at ``|``)."""
    names = (
        [part.strip() for part in include.split("|")] if isinstance(include, str) else list(include)
    )
    if not names:
        raise ValueError(f"include must name at least one of {', '.join(FIELDS)}")
    for name in names:
        if name not in FIELDS:
            raise ValueError(f"include: unknown field {name!r}; the fields are {', '.join(FIELDS)}")
    if len(set(names)) < len(names):
        raise ValueError(f"include names a field twice: {'|'.join(names)}")
    return Shown(names)


def read_rubric(text: str) -> Rubric:
    """A rubric given as text: a JSON object of level to meaning (the command line's
    ``rubric='{"1": "rude", "5": "warm"}'``)."""
    from .._json import loads

    try:
        table = loads(text)
    except ValueError as error:
        raise ValueError(f"rubric must be a JSON object of level to meaning: {error}") from None
    return Rubric(table)


class Criteria(JudgedMetric):
    """Your own criteria, judged: pass/fail in plain language, or a rubric of levels.

    ``criteria`` says what a good conversation does, in plain language. Without a
    ``rubric`` the judge decides pass (1.0) or fail (0.0); with one (a mapping of level
    to meaning, numbered or named, see :class:`Rubric`) it picks a level, mapped to 0..1
    as the module's docstring says. ``include`` names the sample fields the judge sees
    (:data:`FIELDS`); a field the sample lacks is left out. Give each criterion its own
    ``name``: several run side by side, each under its name. One judge call per sample;
    the reason is the judge's, the level is in the details.
    """

    name = "criteria"
    sample_types = (MultiTurnSample,)
    required_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        *,
        name: str | None = None,
        criteria: str,
        rubric: Mapping[Any, str] | Rubric | None = None,
        include: Sequence[str] | str = DEFAULT_INCLUDE,
        threshold: float | None = None,
        llm: Judge | None = None,
    ) -> None:
        if not isinstance(criteria, str) or not criteria.strip():
            raise ValueError("criteria must be non-empty text saying what to judge")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ValueError("name must be non-empty text")
        super().__init__(llm, name=name, threshold=threshold)
        self.criteria = criteria.strip()
        self.rubric: Rubric | None = None if rubric is None else Rubric(rubric)
        self.include = shown_fields(include)
        self._scale = self.rubric if self.rubric is not None else Rubric(PASS_FAIL)
        self._schema = self._scale.schema()  # one object, so its checker is made once

    @property
    def scale(self) -> str:
        """``pass/fail``, ``numbered`` or ``named``: how the level is chosen."""
        if self.rubric is None:
            return "pass/fail"
        return "numbered" if self.rubric.numbered else "named"

    def shown(self, sample: MultiTurnSample) -> str:
        """The included fields of ``sample`` as the prompt shows them, under headings;
        MissingFieldError when the sample has none of them."""
        return self._shown(sample)[0]

    def _shown(self, sample: MultiTurnSample) -> tuple[str, dict[str, Any]]:
        """:meth:`shown`, and what the transcript's budget shortened (empty if nothing)."""
        from ..errors import MissingFieldError
        from ..judge.transcripts import render_transcript

        parts = []
        shortened: dict[str, Any] = {}
        for field in self.include:
            value = getattr(sample, _SAMPLE_FIELD[field])
            if value is None:
                continue
            if field == "conversation":
                transcript = render_transcript(sample)
                text, shortened = transcript.text, dict(transcript.shortened)
            elif field == "reference_tool_calls":
                text = _calls_text(value)
            else:
                text = str(value)
            parts.append(f"{_HEADINGS[field]}:\n{text}")
        if not parts:
            names = ", ".join(f"'{_SAMPLE_FIELD[field]}'" for field in self.include)
            raise MissingFieldError(
                f"{self.name} shows the judge {names}, and this sample has none of them"
            )
        return "\n\n".join(parts), shortened

    def variables(self, sample: MultiTurnSample) -> dict[str, str]:
        """What the prompt's template is filled with for ``sample``: the criteria, the
        levels (:meth:`Rubric.text`) and the fields shown (:meth:`shown`)."""
        return self._variables(sample)[0]

    def _variables(self, sample: MultiTurnSample) -> tuple[dict[str, str], dict[str, Any]]:
        shown, shortened = self._shown(sample)
        variables = {"criteria": self.criteria, "levels": self._scale.text(), "sample": shown}
        return variables, shortened

    async def ascore(self, sample: Sample) -> Score:
        from ..judge.base import JudgeError
        from ..judge.templates import load_prompt

        self.check(sample)
        assert isinstance(sample, MultiTurnSample)
        prompt = load_prompt(PROMPT)
        variables, shortened = self._variables(sample)
        answer = await self.ask(prompt.request(variables, schema=self._schema))
        reason = str(answer.data["reason"]).strip()
        if not reason:
            raise JudgeError(
                f"{self.name}: the judge gave level {answer.data['level']!r} without a reason",
                answer.usage,
            )
        level = answer.data["level"]
        value = self._scale.value(level)  # the schema holds it to the levels
        details = {
            "level": level,
            "levels": self._scale.labels,
            "scale": self.scale,
            "shown": [
                field for field in self.include if getattr(sample, _SAMPLE_FIELD[field]) is not None
            ],
            "prompt": {"name": prompt.name, "version": prompt.version},
        }
        if shortened:  # the run was too long for the transcript's budget: what was cut
            details["shortened"] = shortened
        return self.result(value, reason, details, answer.usage)


def _calls_text(calls: Sequence[Any]) -> str:
    """Reference tool calls, numbered, each as it reads in code (``(none)`` if empty)."""
    from ..judge.transcripts import call_text

    if not calls:
        return "(none)"
    return "\n".join(f"{number}. {call_text(call)}" for number, call in enumerate(calls, 1))
