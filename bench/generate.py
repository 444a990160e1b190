"""Seeded generator of realistic agent conversations, as tracegrade JSON lines.

Each conversation has 2-6 turns. In a turn the human asks, the agent makes one or two
AI messages with 1-3 tool calls each (from a pool of tools whose arguments include
nested objects and lists), every call gets its tool message, and the agent answers.
The reference tool calls partly overlap the predicted ones: some calls are kept as
they are, some get a changed argument, some are dropped, some are added, and now
and then two are swapped.

With ``--behaviour`` each conversation also carries what the behaviour metrics read
(tool_error_recovery, tool_call_efficiency, the budgets, handoff_match): every AI
message a ``usage`` (tokens, some read from a cache, from one of three OpenAI models) and
a ``timing``, every tool message an ``outcome`` and a ``timing``; a few calls fail (a
rate limit, a timeout, a refused argument) and are then retried as they were, changed or
left; now and then the agent repeats a call it has just made; some conversations are
handed to another agent, and every one has ``reference_handoffs``. These are drawn from
a second random stream after the plain conversation, so the plain conversations are the
same in both forms (the variant only adds to them) and the default output stays the
same bytes as before the variant existed.

Only the standard library is used, so every benchmark environment can import it; the
same seed always gives the same bytes.

    python bench/generate.py 10000 out.jsonl --seed 7
    python bench/generate.py 10000 out.jsonl --seed 7 --behaviour
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

CITIES = ["Berlin", "Paris", "Rome", "Lisbon", "Oslo", "Vienna", "Prague", "Madrid", "Dublin"]
AIRPORTS = ["BER", "CDG", "FCO", "LIS", "OSL", "VIE", "PRG", "MAD", "DUB"]
TAGS = ["wifi", "breakfast", "pool", "parking", "gym", "pets", "spa", "quiet"]
WORDS = [
    "report",
    "invoice",
    "meeting",
    "budget",
    "review",
    "draft",
    "launch",
    "customer",
    "refund",
    "schedule",
    "summary",
    "contract",
    "shipment",
    "ticket",
    "quarter",
    "forecast",
]


def _date(rng: random.Random) -> str:
    return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def _search_flights(rng: random.Random) -> dict[str, Any]:
    return {
        "origin": rng.choice(AIRPORTS),
        "destination": rng.choice(AIRPORTS),
        "date": _date(rng),
        "passengers": rng.randint(1, 4),
        "cabin": rng.choice(["economy", "premium", "business"]),
    }


def _search_hotels(rng: random.Random) -> dict[str, Any]:
    return {
        "city": rng.choice(CITIES),
        "check_in": _date(rng),
        "nights": rng.randint(1, 7),
        "filters": {
            "max_price": rng.choice([80, 120, 150, 200, 300]),
            "amenities": rng.sample(TAGS, rng.randint(1, 3)),
            "rating": {"min": rng.choice([3, 3.5, 4, 4.5])},
        },
    }


def _get_weather(rng: random.Random) -> dict[str, Any]:
    return {"city": rng.choice(CITIES), "days": rng.randint(1, 5), "units": "metric"}


def _send_email(rng: random.Random) -> dict[str, Any]:
    return {
        "to": [f"{rng.choice(WORDS)}@example.com" for _ in range(rng.randint(1, 3))],
        "subject": _words(rng, 2, 5),
        "body": _words(rng, 8, 20),
        "cc": [],
    }


def _query_orders(rng: random.Random) -> dict[str, Any]:
    return {
        "customer_id": rng.randint(1000, 99999),
        "status": rng.sample(["open", "shipped", "returned", "cancelled"], rng.randint(1, 2)),
        "range": {"from": _date(rng), "to": _date(rng)},
        "limit": rng.choice([10, 20, 50]),
    }


def _create_ticket(rng: random.Random) -> dict[str, Any]:
    return {
        "title": _words(rng, 3, 6),
        "priority": rng.choice(["low", "medium", "high"]),
        "labels": rng.sample(WORDS, rng.randint(0, 3)),
        "assignee": {"team": rng.choice(["support", "billing", "ops"]), "user": None},
    }


def _convert_currency(rng: random.Random) -> dict[str, Any]:
    return {
        "amount": round(rng.uniform(5, 5000), 2),
        "from": rng.choice(["EUR", "USD", "GBP", "NOK"]),
        "to": rng.choice(["EUR", "USD", "GBP", "NOK"]),
    }


def _search_docs(rng: random.Random) -> dict[str, Any]:
    return {
        "query": _words(rng, 2, 6),
        "top_k": rng.choice([3, 5, 10]),
        "include_archived": rng.random() < 0.2,
    }


def _calendar_add(rng: random.Random) -> dict[str, Any]:
    return {
        "title": _words(rng, 2, 4),
        "start": f"{_date(rng)}T{rng.randint(8, 18):02d}:00:00",
        "duration_minutes": rng.choice([15, 30, 45, 60, 90]),
        "attendees": [{"email": f"{rng.choice(WORDS)}@example.com", "optional": False}],
    }


def _run_sql(rng: random.Random) -> dict[str, Any]:
    table = rng.choice(["orders", "customers", "tickets", "payments"])
    return {"query": f"SELECT * FROM {table} LIMIT {rng.randint(1, 100)}", "timeout_s": 30}


TOOLS: dict[str, Callable[[random.Random], dict[str, Any]]] = {
    "search_flights": _search_flights,
    "search_hotels": _search_hotels,
    "get_weather": _get_weather,
    "send_email": _send_email,
    "query_orders": _query_orders,
    "create_ticket": _create_ticket,
    "convert_currency": _convert_currency,
    "search_docs": _search_docs,
    "calendar_add": _calendar_add,
    "run_sql": _run_sql,
}
TOOL_NAMES = list(TOOLS)


def _call(rng: random.Random) -> dict[str, Any]:
    name = rng.choice(TOOL_NAMES)
    return {"name": name, "args": TOOLS[name](rng)}


def _changed(rng: random.Random, call: dict[str, Any]) -> dict[str, Any]:
    """The call with one top-level argument given another value drawn for the same tool."""
    args = dict(call["args"])
    fresh = TOOLS[call["name"]](rng)
    key = rng.choice(list(args))
    args[key] = fresh[key]
    return {"name": call["name"], "args": args}


def _reference(rng: random.Random, predicted: list[dict[str, Any]]) -> list[dict[str, Any]]:
    reference: list[dict[str, Any]] = []
    for call in predicted:
        roll = rng.random()
        if roll < 0.75:
            reference.append({"name": call["name"], "args": call["args"]})
        elif roll < 0.95:
            reference.append(_changed(rng, call))
        # else: the agent made a call the reference does not want
    for _ in range(rng.choice([0, 0, 0, 0, 0, 1, 2])):
        reference.insert(rng.randint(0, len(reference)), _call(rng))
    if len(reference) > 1 and rng.random() < 0.15:
        i = rng.randrange(len(reference) - 1)
        reference[i], reference[i + 1] = reference[i + 1], reference[i]
    return reference


def conversation(rng: random.Random, index: int) -> dict[str, Any]:
    """One conversation record: ``id``, ``user_input`` and ``reference_tool_calls``."""
    messages: list[dict[str, Any]] = []
    predicted: list[dict[str, Any]] = []
    for turn in range(rng.randint(2, 6)):
        messages.append({"type": "human", "content": f"Please help: {_words(rng, 5, 15)}."})
        for step in range(rng.randint(1, 2)):
            calls = [_call(rng) for _ in range(rng.randint(1, 3))]
            for position, call in enumerate(calls):
                call["id"] = f"call_{turn}_{step}_{position}"
            predicted.extend(calls)
            messages.append({"type": "ai", "content": _words(rng, 0, 6), "tool_calls": calls})
            for call in calls:
                result = {"ok": True, "items": [_words(rng, 1, 3) for _ in range(3)]}
                messages.append(
                    {
                        "type": "tool",
                        "content": json.dumps(result),
                        "tool_call_id": call["id"],
                    }
                )
        messages.append({"type": "ai", "content": f"Done: {_words(rng, 6, 18)}."})
    plain = [{"name": call["name"], "args": call["args"]} for call in predicted]
    return {
        "id": f"conv-{index}",
        "user_input": messages,
        "reference_tool_calls": _reference(rng, plain),
    }


MODELS = [("gpt-4o-mini", 0.6), ("gpt-4o", 0.25), ("gpt-4.1-mini", 0.15)]
"""The models that answer, with their shares of the conversations (priced in
bench/prices.toml)."""
AGENTS = ["billing", "travel", "support", "research"]
"""The agents a conversation may be handed to; every one starts with ``triage``."""
ERRORS = {
    "429": ("retryable", '{"error":"429 Too Many Requests","retry_after":1}'),
    "TimeoutError": ("retryable", '{"error":"the tool did not answer within 30 s"}'),
    "ValidationError": ("refused", '{"error":"invalid argument"}'),
    "NotFoundError": ("refused", '{"error":"no such record"}'),
}
"""The error types a failing call gets, whether retrying the same call can help, and
what the tool answers."""
ERROR_SHARE = 0.04
"""The share of calls that fail."""
REDUNDANT_SHARE = 0.03
"""The share of tool-calling steps after which the agent repeats one of its calls."""
HANDOFF_SHARE = 0.3
"""The share of conversations handed to another agent (once or twice)."""
_DEFAULT_CALL = re.compile(r"call_\d+_\d+_\d+")


def _weighted(rng: random.Random, choices: list[tuple[str, float]]) -> str:
    roll, total = rng.random(), 0.0
    for value, share in choices:
        total += share
        if roll < total:
            return value
    return choices[-1][0]


class _Behaviour:
    """Adds usage, timing, outcomes, retries, repeats and handoffs to one plain
    conversation, drawing from ``rng`` alone."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.model = _weighted(rng, MODELS)
        day = datetime(2026, rng.randint(1, 12), rng.randint(1, 28), tzinfo=timezone.utc)
        self.now = day + timedelta(seconds=rng.randint(0, 86_000))
        self.context = rng.randint(600, 1500)  # the prompt's tokens before the first turn
        self.cached = 0  # tokens of the prompt a cache holds
        self.agent: str | None = None
        self.out: list[dict[str, Any]] = []
        self.extra = 0  # calls added, for their ids

    def _moment(self) -> str:
        return self.now.isoformat(timespec="milliseconds")

    def wait(self, low: float, high: float) -> None:
        self.now += timedelta(milliseconds=round(self.rng.uniform(low, high) * 1000))

    def _grow(self, text: str) -> None:
        self.context += len(text) // 4 + 4

    def ai(self, message: dict[str, Any]) -> dict[str, Any]:
        """``message`` (a copy) with the usage and timing of the LLM step behind it."""
        rng = self.rng
        message = dict(message)
        output = len(message["content"]) // 4 + 20 * len(message.get("tool_calls") or []) + 5
        output += rng.randint(0, 40)
        usage: dict[str, Any] = {"input_tokens": self.context, "output_tokens": output}
        if self.cached >= 1024 and rng.random() < 0.7:
            usage["cache_read_tokens"] = self.cached // 128 * 128
        usage["model"] = self.model
        usage["provider"] = "openai"
        started = self._moment()
        self.wait(0.3 + output / 120, 0.8 + output / 60)
        message["usage"] = usage
        message["timing"] = {"started_at": started, "ended_at": self._moment()}
        if self.agent is not None:
            message["metadata"] = {"agent": self.agent}
        self.cached = self.context
        self.context += output
        self.out.append(message)
        return message

    def tools(self, messages: list[dict[str, Any]], failing: list[str | None]) -> None:
        """The tool results of one step (its calls run in parallel), ``failing`` giving
        each one's error type or ``None``."""
        started = self.now
        ends = []
        for message, error in zip(messages, failing, strict=True):
            message = dict(message)
            if error is None:
                message["outcome"] = {"status": "ok"}
            else:
                message["content"] = ERRORS[error][1]
                message["outcome"] = {"status": "error", "error_type": error}
            ended = started + timedelta(milliseconds=self.rng.randint(40, 2500))
            ends.append(ended)
            message["timing"] = {
                "started_at": started.isoformat(timespec="milliseconds"),
                "ended_at": ended.isoformat(timespec="milliseconds"),
            }
            self._grow(message["content"])
            self.out.append(message)
        self.now = max(ends, default=self.now)

    def step(self, calls: list[dict[str, Any]], content: str) -> list[str | None]:
        """An added step making ``calls`` (ids given here); how each ended."""
        for call in calls:
            call["id"] = f"extra_{self.extra}"
            self.extra += 1
        self.ai({"type": "ai", "content": content, "tool_calls": calls})
        results = [
            {"type": "tool", "content": '{"ok":true}', "tool_call_id": call["id"]} for call in calls
        ]
        failing = [self.error() if self.rng.random() < 0.15 else None for _ in calls]
        self.tools(results, failing)
        return failing

    def error(self) -> str:
        return self.rng.choice(list(ERRORS))

    def after(self, calls: list[dict[str, Any]], failing: list[str | None]) -> None:
        """What the agent does after a step: for each failed call, retry it as it was,
        change it or leave it; now and then repeat a call that worked."""
        rng = self.rng
        for call, error in zip(calls, failing, strict=True):
            if error is None:
                continue
            roll = rng.random()
            same = {"name": call["name"], "args": call["args"]}
            if ERRORS[error][0] == "retryable":
                if roll < 0.6:
                    self.step([same], "Retrying.")
                elif roll < 0.85:
                    self.step([_changed(rng, same)], "Trying it another way.")
            elif roll < 0.4:
                self.step([_changed(rng, same)], "Fixing the arguments.")
            elif roll < 0.65:
                self.step([same], "Retrying.")  # a loop: the same refused call again
        worked = [call for call, error in zip(calls, failing, strict=True) if error is None]
        if worked and rng.random() < REDUNDANT_SHARE:
            call = rng.choice(worked)
            self.step([{"name": call["name"], "args": call["args"]}], "Checking again.")

    def handoff(self, target: str) -> None:
        """The agent hands the conversation to ``target``."""
        call = {"name": "transfer_to_agent", "args": {"agent_name": target}}
        call.update({"type": "HANDOFF", "target_agent": target})
        self.step([call], "")
        self.agent = target


def with_behaviour(record: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """``record`` (a plain conversation) with what the behaviour metrics read, drawn
    from ``rng``: the same messages with fields added, and added steps (retries, repeats,
    handoffs) whose calls' ids do not start with ``call_``; failed calls' results say
    what failed. Also ``reference_handoffs``."""
    behaviour = _Behaviour(rng)
    messages = record["user_input"]
    turns = sum(1 for message in messages if message["type"] == "human")
    handoffs: dict[int, str] = {}
    if rng.random() < HANDOFF_SHARE:
        behaviour.agent = "triage"
        for turn in sorted(rng.sample(range(turns), min(turns, rng.choice([1, 1, 2])))):
            handoffs[turn] = rng.choice([a for a in AGENTS if a != behaviour.agent])
    turn = -1
    index = 0
    while index < len(messages):
        message = messages[index]
        if message["type"] == "human":
            turn += 1
            if turn:
                behaviour.wait(2, 40)  # the human reads and answers
            behaviour.out.append(message)
            behaviour._grow(message["content"])
            if turn in handoffs:
                behaviour.handoff(handoffs[turn])
            index += 1
            continue
        behaviour.ai(message)
        calls = message.get("tool_calls") or []
        results = messages[index + 1 : index + 1 + len(calls)]
        failing = [behaviour.error() if rng.random() < ERROR_SHARE else None for _ in calls]
        behaviour.tools(results, failing)
        behaviour.after(calls, failing)
        index += 1 + len(calls)
    made = [handoffs[turn] for turn in sorted(handoffs)]
    roll = rng.random()
    if made:
        reference = list(made)
        if roll < 0.1:
            reference[-1] = rng.choice([a for a in AGENTS if a != made[-1]])
        elif roll < 0.15:
            reference.pop()
        elif roll < 0.2:
            reference.append(rng.choice(AGENTS))
    else:
        reference = [rng.choice(AGENTS)] if roll < 0.1 else []
    return {**record, "user_input": behaviour.out, "reference_handoffs": reference}


def conversations(count: int, seed: int = 0, behaviour: bool = False) -> Iterator[dict[str, Any]]:
    """``count`` conversations; the same seed gives the same conversations. With
    ``behaviour``, each with what the behaviour metrics read (see :func:`with_behaviour`),
    drawn from a second stream: the plain conversations are the same either way."""
    rng = random.Random(seed)
    extra = random.Random(f"behaviour:{seed}") if behaviour else None
    for index in range(count):
        record = conversation(rng, index)
        yield record if extra is None else with_behaviour(record, extra)


def write_jsonl(path: Path, count: int, seed: int = 0, behaviour: bool = False) -> Path:
    """Write ``count`` conversations to ``path``, one JSON object per line."""
    with open(path, "w", encoding="utf-8") as handle:
        for record in conversations(count, seed, behaviour):
            handle.write(json.dumps(record, separators=(",", ":")))
            handle.write("\n")
    return path


def dataset(work: Path, count: int, behaviour: bool = False) -> Path:
    """The bench's ``count`` conversations (seed 0) in ``work``, generated the first time
    they are asked for (whole or not at all) and reused after; with ``behaviour``, their
    behaviour variant (a file of its own)."""
    kind = "behaviour-conversations" if behaviour else "conversations"
    path = work / f"{kind}-{count}.jsonl"
    if not path.exists():
        print(f"bench: generating {count} {kind} ...", file=sys.stderr, flush=True)
        partial = path.with_suffix(".partial")
        write_jsonl(partial, count, seed=0, behaviour=behaviour)
        partial.rename(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--behaviour", action="store_true", help="with usage, timing, outcomes and handoffs"
    )
    options = parser.parse_args()
    write_jsonl(options.out, options.count, options.seed, options.behaviour)


if __name__ == "__main__":
    main()
