"""TopicAdherenceScore: does the agent answer what is within its topics and only that?

One judge call per sample, whatever the number of topics: the judge lists the topics
the human raised and, for each, whether the AI answered or refused it and which
reference topic (if any) it falls under. The counts then give

- precision = answered on-topic / (answered on-topic + answered off-topic)
- recall = answered on-topic / (answered on-topic + refused on-topic)
- F1 = 2 · precision · recall / (precision + recall)

with 0.0 wherever a denominator is zero. Refusing an off-topic request is right but
enters neither formula.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from ..model.samples import MultiTurnSample, Sample
from .judged import JudgedMetric

if TYPE_CHECKING:
    from ..judge.base import Judge
    from ..model.results import Score

TopicMode = Literal["f1", "precision", "recall"]
PROMPT = "topic_adherence"


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def _schema(reference_topics: list[str]) -> dict[str, Any]:
    """The prompt's answer schema with ``reference_topic`` limited to this sample's
    topics (or null), so the judge cannot name a topic that is not in the reference."""
    from ..judge.templates import load_prompt

    schema: dict[str, Any] = dict(load_prompt(PROMPT).schema)
    topics = dict(schema["properties"]["topics"])
    item = dict(topics["items"])
    properties = dict(item["properties"])
    choices: list[str | None] = list(dict.fromkeys(reference_topics))
    properties["reference_topic"] = {"type": ["string", "null"], "enum": [*choices, None]}
    item["properties"] = properties
    topics["items"] = item
    schema["properties"] = {**schema["properties"], "topics": topics}
    return schema


def _listed(topics: list[dict[str, Any]]) -> str:
    return ", ".join(topic["topic"] for topic in topics)


class TopicAdherenceScore(JudgedMetric):
    """Does the AI answer the human's topics within ``reference_topics``, and only those?

    The value is the precision, recall or F1 (``mode``) of answering on-topic requests
    and refusing off-topic ones, from one judge call per sample. No topics raised, or
    none that enter the chosen formula, scores 0.0; every on-topic request answered and
    nothing off-topic answered scores 1.0. The value is rounded to 4 decimal places.
    """

    name = "topic_adherence"
    sample_types = (MultiTurnSample,)
    required_fields: ClassVar[tuple[str, ...]] = ("user_input", "reference_topics")

    def __init__(
        self,
        mode: TopicMode = "f1",
        llm: Judge | None = None,
        *,
        name: str | None = None,
        threshold: float | None = None,
    ) -> None:
        if mode not in get_args(TopicMode):
            raise ValueError(f"mode must be 'f1', 'precision' or 'recall', not {mode!r}")
        super().__init__(llm, name=name, threshold=threshold)
        self.mode: TopicMode = mode

    async def ascore(self, sample: Sample) -> Score:
        from ..judge.templates import load_prompt

        self.check(sample)
        assert isinstance(sample, MultiTurnSample) and sample.reference_topics is not None
        prompt = load_prompt(PROMPT)
        request = prompt.request(
            {"conversation": sample.user_input, "reference_topics": sample.reference_topics},
            schema=_schema(sample.reference_topics),
        )
        answer = await self.ask(request)
        topics = [self._topic(item) for item in answer.data["topics"]]
        counts = {
            "answered_on_topic": 0,
            "answered_off_topic": 0,
            "refused_on_topic": 0,
            "refused_off_topic": 0,
        }
        for topic in topics:
            key = ("answered" if topic["answered"] else "refused") + (
                "_on_topic" if topic["on_topic"] else "_off_topic"
            )
            counts[key] += 1
        hits = counts["answered_on_topic"]
        precision = _ratio(hits, hits + counts["answered_off_topic"])
        recall = _ratio(hits, hits + counts["refused_on_topic"])
        f1 = _ratio(2 * hits, 2 * hits + counts["answered_off_topic"] + counts["refused_on_topic"])
        value = round({"f1": f1, "precision": precision, "recall": recall}[self.mode], 4)
        details = {
            "mode": self.mode,
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "counts": counts,
            "topics": topics,
            "prompt": {"name": prompt.name, "version": prompt.version},
        }
        return self.result(value, self._reason(value, topics, details), details, answer.usage)

    @staticmethod
    def _topic(item: Mapping[str, Any]) -> dict[str, Any]:
        reference = item["reference_topic"]
        return {
            "topic": item["topic"],
            "answered": item["response"] == "answered",
            "on_topic": reference is not None,
            "reference_topic": reference,
        }

    def _reason(self, value: float, topics: list[dict[str, Any]], details: dict[str, Any]) -> str:
        if not topics:
            return "the judge found no topic raised by the human; 0.0 by convention"
        parts = [
            f"{self.mode} {value:.4g} (precision {details['precision']:.4g}, "
            f"recall {details['recall']:.4g}) over {len(topics)} topic(s)"
        ]
        off = [t for t in topics if t["answered"] and not t["on_topic"]]
        missed = [t for t in topics if not t["answered"] and t["on_topic"]]
        declined = [t for t in topics if not t["answered"] and not t["on_topic"]]
        if off:
            parts.append(f"answered off-topic: {_listed(off)}")
        if missed:
            parts.append(f"refused on-topic: {_listed(missed)}")
        if declined:
            parts.append(f"rightly refused off-topic: {_listed(declined)}")
        if not details["counts"]["answered_on_topic"]:
            parts.append(
                "no on-topic request was answered"
                if off or missed
                else "no topic enters the formula (none on-topic, none answered off-topic), "
                "so 0.0 by convention"
            )
        elif not off and not missed:
            parts.append("every on-topic request was answered and nothing off-topic")
        return "; ".join(parts)
