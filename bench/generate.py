"""Seeded generator of realistic agent conversations, as tracegrade JSON lines.

Each conversation has 2-6 turns. In a turn the human asks, the agent makes one or two
AI messages with 1-3 tool calls each (from a pool of tools whose arguments include
nested objects and lists), every call gets its tool message, and the agent answers.
The reference tool calls partly overlap the predicted ones: some calls are kept as
they are, some get a changed argument, some are dropped, some are added, and now
and then two are swapped.

Only the standard library is used, so every benchmark environment can import it; the
same seed always gives the same bytes.

    python bench/generate.py 10000 out.jsonl --seed 7
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Iterator
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


def conversations(count: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """``count`` conversations; the same seed gives the same conversations."""
    rng = random.Random(seed)
    for index in range(count):
        yield conversation(rng, index)


def write_jsonl(path: Path, count: int, seed: int = 0) -> Path:
    """Write ``count`` conversations to ``path``, one JSON object per line."""
    with open(path, "w", encoding="utf-8") as handle:
        for record in conversations(count, seed):
            handle.write(json.dumps(record, separators=(",", ":")))
            handle.write("\n")
    return path


def dataset(work: Path, count: int) -> Path:
    """The bench's ``count`` conversations (seed 0) in ``work``, generated the first time
    they are asked for (whole or not at all) and reused after."""
    path = work / f"conversations-{count}.jsonl"
    if not path.exists():
        print(f"bench: generating {count} conversations ...", file=sys.stderr, flush=True)
        partial = path.with_suffix(".partial")
        write_jsonl(partial, count, seed=0)
        partial.rename(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    write_jsonl(options.out, options.count, options.seed)


if __name__ == "__main__":
    main()
