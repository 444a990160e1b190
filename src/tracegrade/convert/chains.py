"""Records chained by ``previous_response_id`` (OpenAI Responses), joined into one sample.

A Responses conversation continued server-side is stored as several records, each a
Response, a request or a ``{"request", "response"}`` exchange naming the response it
continues. Records are joined when one continues a response another holds, in chain order
whatever their order in the file; the joined sample comes out where its first record is,
so the output keeps the records' order.

The plan (:func:`plan_chains`) is made from the links alone (:func:`links_of` of each
record that may hold one); joining (:func:`joined`) then holds only the records of a
chain until its last one is read, and the samples read after a chain's first record until
that chain is complete.

Rules: a record continuing a response that no record holds is an error naming the id; a
response continued by two records (a fork) is an error naming both, as is a response held
by two records; the sample's ``id`` is the one a wrapper gives, else the id of the chain's
last response. Sample fields given by wrappers of several records of a chain are merged;
the same field given two values is an error.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import RecordError, ValidationError, readable_id
from ..model.samples import MultiTurnSample
from ._base import ConversionError
from .openai_responses import Links, convert_chain, links_of
from .records import (
    ConversionSettings,
    Outcome,
    conversation_of,
    first_problem,
    is_wrapper,
    to_sample,
    wrapper_fields,
)

Entry = tuple[int, str, Any]
"""A record read: ``(position, kind, record)``; the record may be a RecordError."""


@dataclass
class Chain:
    """Records joined by ``previous_response_id``: their positions in chain order, and the
    problem that stops them being read, with the position it is at."""

    members: list[int]
    problem: tuple[int, str] | None = None

    @property
    def first(self) -> int:
        return min(self.members)


@dataclass
class Plan:
    """Each chain, and the chain each of its records belongs to (by position)."""

    chains: list[Chain] = field(default_factory=list)
    chain_of: dict[int, Chain] = field(default_factory=dict)

    def add(self, chain: Chain) -> None:
        self.chains.append(chain)
        for position in chain.members:
            self.chain_of[position] = chain


def record_links(record: Any) -> Links | None:
    """The links of a record, or of the conversation its wrapper holds."""
    return links_of(conversation_of(record))


def plan_chains(entries: Iterable[Entry]) -> Plan:
    """The chains among ``entries``; records with no link to another come out of none,
    unless they continue a response that is missing (a chain of one with its problem)."""
    links: dict[int, Links] = {}
    kinds: dict[int, str] = {}
    problems: dict[int, str] = {}
    for position, kind, record in entries:
        if isinstance(record, RecordError):
            continue
        kinds[position] = kind
        try:
            found = record_links(record)
        except ConversionError as error:
            problems[position] = str(error)
            continue
        if found is not None:
            links[position] = found
    return _plan(links, kinds, problems)


def _plan(links: dict[int, Links], kinds: dict[int, str], problems: dict[int, str]) -> Plan:
    holder: dict[str, int] = {}
    for position, found in links.items():
        for own in found.ids:
            other = holder.setdefault(own, position)
            if other != position:
                problems.setdefault(
                    position, f"holds the response {own!r}, as {kinds[other]} {other} does too"
                )
    parent: dict[int, int] = {}
    child: dict[int, int] = {}
    for position, found in links.items():
        if found.previous is None or found.previous in found.ids:
            continue
        if found.previous not in holder:
            problems.setdefault(position, _missing(found.previous))
            continue
        above = holder[found.previous]
        if above in child:
            other = child[above]
            problems.setdefault(position, _fork(found.previous, kinds[other], other))
        else:
            child[above] = position
        parent[position] = above
    plan = Plan()
    for members in _components(sorted(links), parent):
        roots = [position for position in members if position not in parent]
        chain = Chain(_walk(roots[0], child) if roots else members)
        if not roots:
            named = ", ".join(f"{kinds[p]} {p}" for p in members)
            problems.setdefault(members[0], f"the records at {named} continue each other in a loop")
        if len(members) == 1 and members[0] not in problems:
            continue  # a record alone: read as any other
        if len(chain.members) < len(members):  # a fork: the chain holds every branch
            chain = Chain(members)
        chain.problem = next(((p, problems[p]) for p in members if p in problems), None)
        plan.add(chain)
    return plan


def _components(positions: list[int], parent: dict[int, int]) -> list[list[int]]:
    """The records linked to one another, each group in position order."""
    group = {position: position for position in positions}

    def top(position: int) -> int:
        while group[position] != position:
            group[position] = group[group[position]]
            position = group[position]
        return position

    for position, above in parent.items():
        group[top(position)] = top(above)
    found: dict[int, list[int]] = {}
    for position in positions:
        found.setdefault(top(position), []).append(position)
    return sorted(found.values())


def _walk(root: int, child: dict[int, int]) -> list[int]:
    """The records from ``root`` on, each continuing the one before."""
    members = [root]
    while members[-1] in child:
        members.append(child[members[-1]])
    return members


def _missing(previous: str) -> str:
    return (
        f"continues the response {previous!r} (previous_response_id), which no record here "
        "holds; add the record of that response (chained records are joined whatever "
        "their order)"
    )


def _fork(previous: str, kind: str, other: int) -> str:
    return (
        f"continues the response {previous!r}, as {kind} {other} does too: a chain of "
        "previous_response_id links must not branch; keep each branch apart, each with the "
        "records it continues"
    )


def joined(
    entries: Iterable[Entry], plan: Plan, settings: ConversionSettings, *, origin: str
) -> Iterator[Outcome]:
    """Each record as a sample or a RecordError, the records of a chain as one, in the
    order of each one's first record."""
    waiting: list[tuple[int, int, Outcome]] = []  # (first position, order read, outcome)
    open_chains = sorted(chain.first for chain in plan.chains)  # first positions
    held: dict[int, dict[int, Entry]] = {}
    for count, (position, kind, record) in enumerate(entries):
        chain = plan.chain_of.get(position)
        if chain is None:
            heapq.heappush(
                waiting, (position, count, _one(record, position, kind, settings, origin))
            )
        else:
            members = held.setdefault(chain.first, {})
            members[position] = (position, kind, record)
            if len(members) == len(chain.members):
                del held[chain.first]
                outcome = _chain_outcome(chain, members, settings, origin)
                heapq.heappush(waiting, (chain.first, count, outcome))
                open_chains.remove(chain.first)
        while waiting and (not open_chains or waiting[0][0] < open_chains[0]):
            yield heapq.heappop(waiting)[2]
    for chain in plan.chains:
        if chain.first in held:  # the plan knew a record that was not read again
            heapq.heappush(waiting, (chain.first, 0, _unread(chain, origin)))
    while waiting:
        yield heapq.heappop(waiting)[2]


def _unread(chain: Chain, origin: str) -> RecordError:
    return RecordError(
        origin,
        chain.first,
        None,
        "a record of this previous_response_id chain was not there when the file was read "
        "again; did the file change while it was read?",
    )


def _one(
    record: Any, position: int, kind: str, settings: ConversionSettings, origin: str
) -> Outcome:
    if isinstance(record, RecordError):
        return record
    try:
        return to_sample(record, position, settings, origin=origin, kind=kind)
    except RecordError as error:
        return error


def _chain_outcome(
    chain: Chain, members: dict[int, Entry], settings: ConversionSettings, origin: str
) -> Outcome:
    """The sample of a whole chain, or the RecordError of its first problem."""
    entries = [members[position] for position in chain.members]
    first_kind = entries[0][1]
    if len(entries) == 1:
        where = ""
    else:
        named = ", ".join(str(position) for position in chain.members)
        where = f"chained by previous_response_id with {first_kind}s {named}: "
    try:
        fields = _merged_fields(entries, origin)
    except RecordError as error:
        return error
    record_id = readable_id(fields)
    if chain.problem is not None:
        position, problem = chain.problem
        return RecordError(origin, position, None, problem, kind=first_kind, record_id=record_id)
    conversations = [
        (f"{kind} {position}", conversation_of(record)) for position, kind, record in entries
    ]
    try:
        messages = convert_chain(conversations, settings.options())
        fields.setdefault("id", _last_id(entries))
        return MultiTurnSample(user_input=messages, **fields)
    except ConversionError as error:
        rule, field_name = str(error), None
    except ValidationError as error:
        field_name, rule = first_problem(error)
    return RecordError(
        origin, chain.first, field_name, where + rule, kind=first_kind, record_id=record_id
    )


def _merged_fields(entries: list[Entry], origin: str) -> dict[str, Any]:
    """The sample fields the records' wrappers give, one value per field."""
    fields: dict[str, Any] = {}
    given_at: dict[str, int] = {}
    for position, kind, record in entries:
        own = (
            wrapper_fields(record, position, kind=kind, origin=origin) if is_wrapper(record) else {}
        )
        for name, value in own.items():
            if name in fields and fields[name] != value:
                raise RecordError(
                    origin,
                    position,
                    name,
                    f"{kind} {given_at[name]} of the same previous_response_id chain gives "
                    "another value",
                    kind=kind,
                    record_id=readable_id(own),
                )
            fields[name] = value
            given_at.setdefault(name, position)
    return fields


def _last_id(entries: list[Entry]) -> str | None:
    """The id of the chain's last Response: the one that continues it all."""
    for _, _, record in reversed(entries):
        found = record_links(record)
        if found is not None and found.ids:
            return found.ids[-1]
    return None


def chained_records(records: Iterable[Any], settings: ConversionSettings) -> Iterator[Outcome]:
    """:func:`tracegrade.convert.records.convert_records` with chained records joined."""
    entries = [(index, "index", record) for index, record in enumerate(records)]
    yield from joined(entries, plan_chains(entries), settings, origin="records")
