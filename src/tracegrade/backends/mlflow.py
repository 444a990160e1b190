"""The MLflow backend: traces of an MLflow experiment pulled as samples, scores written
back as assessments (feedback) on their traces. MLflow 3's REST API (``/api/3.0``).

``mlflow://HOST:PORT/EXPERIMENT`` names the tracking server and the experiment, by name
(or by id, when no experiment has that name and it is all digits); ``mlflow+https://``
speaks TLS; ``mlflow:///EXPERIMENT`` takes the server from ``MLFLOW_TRACKING_URI``.
Credentials come from ``MLFLOW_TRACKING_TOKEN`` (a bearer token) or
``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD`` (basic), never from the URL.

A pull searches the experiment's traces page by page (``POST /traces/search``, by start
time then id), fetches each page's spans in one request (``GET /traces/batchGet``) and
reads them as the ``mlflow`` source does (:mod:`tracegrade.convert.mlflow`); grouped by
session, a session is the traces sharing ``mlflow.trace.session`` metadata. A push
writes each score as the feedback assessment ``tracegrade.METRIC`` from source
``CODE``/``tracegrade`` on the trace (a session's last trace): the one already there is
updated (``PATCH``), else one is created. An evaluation dataset of the experiment gives
references (:mod:`._mlflow_datasets`).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from ..convert._base import ConversionError, Options, Skipped
from ..convert.mlflow import read_traces, root_span_id, session_messages, trace_info
from ..errors import RecordError, ValidationError
from ..model.decoding import Outcome
from ..model.origin import Origin
from ..model.samples import MultiTurnSample
from ._http import HttpClient
from ._mlflow_datasets import dataset_id, reference_lines
from ._mlflow_search import (
    NEWEST_FIRST,
    ORDER_BY,
    filter_string,
    matches,
    session_of,
    start_ms,
    trace_id_of,
)
from ._selection import Found, accounted, last_of, newest_of
from .base import (
    Address,
    BackendError,
    PullFilters,
    PushedScore,
    PushOutcome,
)

TRACKING_URI = "MLFLOW_TRACKING_URI"
TOKEN = "MLFLOW_TRACKING_TOKEN"
USERNAME = "MLFLOW_TRACKING_USERNAME"
PASSWORD = "MLFLOW_TRACKING_PASSWORD"
SOURCE = {"source_type": "CODE", "source_id": "tracegrade"}
"""Who the assessments tracegrade writes are from; a push updates only these."""
PAGE_SIZE = 100
TRACES = "/api/3.0/mlflow/traces"
EXPERIMENTS = "/api/2.0/mlflow/experiments"


def connect(address: Address) -> MlflowBackend:
    """The client of the MLflow tracking server at ``address``, with the credentials of
    the environment."""
    default = os.environ.get(TRACKING_URI)
    if address.host is None and not (default or "").startswith(("http://", "https://")):
        raise BackendError(
            f"{address}: name the server (mlflow://HOST:PORT/EXPERIMENT) or set "
            f"{TRACKING_URI} to its http(s):// address"
        )
    token = os.environ.get(TOKEN) or None
    username, password = os.environ.get(USERNAME), os.environ.get(PASSWORD)
    secrets = []
    headers = {}
    if token:
        headers["authorization"] = f"Bearer {token}"
        secrets.append(token)
    elif username and password:
        # written here rather than left to httpx, so that the encoded pair is a secret too
        pair = base64.b64encode(f"{username}:{password}".encode()).decode()
        headers["authorization"] = f"Basic {pair}"
        secrets += [password, pair]
    client = HttpClient(
        "MLflow", address.http_base(default), extra="mlflow", headers=headers, secrets=secrets
    )
    return MlflowBackend(address, client)


class MlflowBackend:
    """An MLflow tracking server's traces and assessments (see the module)."""

    def __init__(self, address: Address, client: HttpClient) -> None:
        self.address = address
        self.client = client
        self._experiment: str | None = None
        self.page_size = PAGE_SIZE
        """Traces a search page holds, and a span fetch asks for at most."""

    # --- pull ------------------------------------------------------------------------

    def experiment_id(self) -> str:
        """The id of the experiment the address names (looked up once)."""
        if self._experiment is not None:
            return self._experiment
        name = self.address.project
        if not name:
            raise BackendError(f"{self.address}: name the experiment (mlflow://HOST:PORT/NAME)")
        by_name = {"experiment_name": name}
        found = self.client.request(
            "GET", f"{EXPERIMENTS}/get-by-name", params=by_name, ok=(404,), expect=dict
        )
        if not found.get("experiment") and name.isdigit():
            by_id = {"experiment_id": name}
            found = self.client.request(
                "GET", f"{EXPERIMENTS}/get", params=by_id, ok=(404,), expect=dict
            )
        experiment = found.get("experiment") if isinstance(found, Mapping) else None
        if not isinstance(experiment, Mapping) or "experiment_id" not in experiment:
            raise BackendError(f"{self.address}: MLflow has no experiment named {name!r}")
        self._experiment = str(experiment["experiment_id"])
        return self._experiment

    def infos(self, filters: PullFilters, newest: bool = False) -> Iterator[dict[str, Any]]:
        """The trace infos the filters select, page by page, first started first (last
        first when ``newest``)."""
        body: dict[str, Any] = {
            "locations": [
                {
                    "type": "MLFLOW_EXPERIMENT",
                    "mlflow_experiment": {"experiment_id": self.experiment_id()},
                }
            ],
            "max_results": self.page_size,
            "order_by": list(NEWEST_FIRST if newest else ORDER_BY),
        }
        text = filter_string(filters)
        if text:
            body["filter"] = text
        while True:
            reply = self.client.post(f"{TRACES}/search", body, expect=dict)
            infos = reply.get("traces") or []
            if not isinstance(infos, list) or not all(isinstance(i, Mapping) for i in infos):
                raise self.client.unexpected("POST", f"{TRACES}/search", "a 'traces' list")
            for info in infos:
                if matches(info, filters):
                    yield dict(info)
            token = reply.get("next_page_token")
            if not token:
                return
            body["page_token"] = token

    def traces(self, trace_ids: Sequence[str]) -> dict[str, Any]:
        """The complete traces (info and spans) of ``trace_ids``, by id, in one request."""
        path = f"{TRACES}/batchGet"
        reply = self.client.get(path, params={"trace_ids": list(trace_ids)}, expect=dict)
        traces = reply.get("traces") or []
        if not isinstance(traces, list):
            raise self.client.unexpected("GET", path, "a 'traces' list")
        found: dict[str, Any] = {}
        for trace in traces:
            try:
                found[trace_id_of(trace_info(trace))] = trace
            except ConversionError:
                raise self.client.unexpected("GET", path, "traces with a trace_info") from None
        return found

    def pull(self, filters: PullFilters, skipped: Skipped) -> Iterator[Outcome]:
        """Each trace (or session) the filters select as a sample, or the RecordError
        saying why it is not one; oldest first, and with a limit the newest that many
        (searched newest first, so paging stops there)."""
        found = Found()
        where = f"MLflow experiment {self.address.project!r}"
        outcomes = self._outcomes(filters, skipped, found)
        yield from accounted(self.address, filters, outcomes, where, found)

    def _outcomes(self, filters: PullFilters, skipped: Skipped, found: Found) -> Iterator[Outcome]:
        if filters.group_by == "session":
            groups: dict[str, tuple[str | None, list[dict[str, Any]]]] = {}
            for info in self.infos(filters):
                trace_id, session = trace_id_of(info), session_of(info)
                found.add(trace_id, session)
                # a trace that names no session is a conversation of its own
                groups.setdefault(session or trace_id, (session, []))[1].append(info)
            by_last = sorted(groups.items(), key=lambda item: _order(item[1][1][-1]))
            chosen = sorted(last_of(by_last, filters.limit), key=lambda item: _order(item[1][1][0]))
            for position, (key, (session, kept)) in enumerate(chosen):
                members = [trace_id_of(info) for info in kept]
                traces = {}
                size = self.page_size
                for start in range(0, len(members), size):
                    traces.update(self.traces(members[start : start + size]))
                yield self._outcome(position, key, members, traces, skipped, session)
            return
        newest = filters.limit is not None
        listed: Iterable[dict[str, Any]] = self.infos(filters, newest)
        if newest:
            listed = newest_of(listed, filters.limit)
        position = 0
        selected = iter(listed)
        while page := list(islice(selected, self.page_size)):
            traces = self.traces([trace_id_of(info) for info in page])
            for info in page:
                trace_id = trace_id_of(info)
                found.add(trace_id, session_of(info))
                yield self._outcome(position, trace_id, [trace_id], traces, skipped, None)
                position += 1

    def _outcome(
        self,
        position: int,
        key: str,
        members: list[str],
        traces: Mapping[str, Any],
        skipped: Skipped,
        session: str | None,
    ) -> Outcome:
        """The conversation of the traces ``members`` (a trace, or ``session``'s) as a
        sample with its origin, or a RecordError naming ``key``."""
        missing = [trace_id for trace_id in members if trace_id not in traces]
        if missing:
            rule = f"MLflow returned no trace {missing[0]!r} (deleted while pulling?)"
            return RecordError(self.address.text, position, None, rule, kind="trace", record_id=key)
        found = [traces[trace_id] for trace_id in members]
        options = Options(skipped=skipped)
        try:
            if session is None:
                conversations = read_traces(found, "trace", options)
                if not conversations:  # every call in it was set apart (counted)
                    raise ConversionError("none of its model calls or tool runs is the agent's")
                messages = conversations[0].messages
            else:
                messages = session_messages(found, options)
            roots = [root_span_id(trace) for trace in found]
            origin = Origin(
                system="mlflow",
                location=self.address.text,
                project=self.experiment_id(),
                trace_ids=tuple(members),
                root_ids=tuple(root for root in roots if root) if all(roots) else (),
                session_id=session,
            )
            return MultiTurnSample(id=key, user_input=messages, origin=origin)
        except (ConversionError, ValidationError) as error:
            what = "trace" if session is None else "session"
            return RecordError(
                self.address.text,
                position,
                None,
                f"{what} {key}: {error}",
                kind="trace",
                record_id=key,
            )

    # --- push ------------------------------------------------------------------------

    def push(self, scores: Sequence[PushedScore]) -> PushOutcome:
        """Write each score as a feedback assessment on its trace, updating the one of the
        same name from tracegrade that is there already (and removing any second one).
        A score MLflow refuses (no such trace, a 400) is refused with the reason."""
        outcome = PushOutcome()
        known: dict[str, list[dict[str, Any]]] = {}
        for score in scores:
            done = self._push_one(score, known)
            if done == "created":
                outcome.created += 1
            elif done == "updated":
                outcome.updated += 1
            else:
                outcome.refused.append((score, done))
        return outcome

    def _push_one(self, score: PushedScore, known: dict[str, list[dict[str, Any]]]) -> str:
        """``created``, ``updated``, or why the score was refused; ``known`` holds the
        assessments of the traces read so far."""
        origin = score.origin
        if origin.system != "mlflow" or not origin.trace_ids:
            return f"not pulled from MLflow ({origin.system})"
        trace_id = origin.trace_ids[-1]  # a session's last trace: MLflow has no session object
        if trace_id not in known:
            reply = self.client.request("GET", f"{TRACES}/{trace_id}", ok=(404,), expect=dict)
            if reply.get("status") == 404:
                return f"MLflow has no trace {trace_id!r}"
            known[trace_id] = [dict(a) for a in trace_info(reply).get("assessments") or []]
        mine = [a for a in known[trace_id] if _ours(a, score.key)]
        body = _assessment(score, trace_id)
        assessments = f"{TRACES}/{trace_id}/assessments"
        if not mine:
            reply = self.client.request(
                "POST", assessments, body={"assessment": body}, ok=(400,), expect=dict
            )
            if reply.get("status") == 400:
                return f"MLflow refused the assessment on trace {trace_id!r} (HTTP 400)"
            known[trace_id].append(dict(reply.get("assessment") or body))
            return "created"
        first = mine[0]["assessment_id"]
        update = {
            "assessment": {**body, "assessment_id": first},
            "update_mask": "feedback,rationale,metadata",
        }
        reply = self.client.request("PATCH", f"{assessments}/{first}", body=update, ok=(400,))
        if isinstance(reply, Mapping) and reply.get("status") == 400:
            return f"MLflow refused the update of assessment {first!r} (HTTP 400)"
        for extra in mine[1:]:  # a copy an interrupted push left
            self.client.request("DELETE", f"{assessments}/{extra['assessment_id']}", ok=(404,))
            known[trace_id].remove(extra)
        return "updated"

    def dataset_references(self, name: str) -> Iterator[dict[str, Any]]:
        """Each record of the experiment's evaluation dataset ``name`` as a references
        line (see :func:`._mlflow_datasets.reference_line`)."""
        dataset = dataset_id(self.client, self.experiment_id(), name)
        yield from reference_lines(self.client, dataset, self.page_size)

    def close(self) -> None:
        """Close the connections."""
        self.client.close()


def _order(info: Mapping[str, Any]) -> tuple[int, str]:
    """Where a trace sorts: by start (one without a start first), then id."""
    return start_ms(info) or 0, trace_id_of(info)


def _ours(assessment: Mapping[str, Any], name: str) -> bool:
    """Whether ``assessment`` is tracegrade's feedback named ``name``."""
    source = assessment.get("source") or {}
    return (
        assessment.get("assessment_name") == name
        and isinstance(source, Mapping)
        and source.get("source_type") == SOURCE["source_type"]
        and source.get("source_id") == SOURCE["source_id"]
        and "feedback" in assessment
    )


def _assessment(score: PushedScore, trace_id: str) -> dict[str, Any]:
    """The feedback assessment of ``score`` on ``trace_id``."""
    metadata = {"tracegrade.metric": score.metric, "tracegrade.sample_id": str(score.sample_id)}
    label = score.label if score.value is not None else "not applicable"
    if label:
        metadata["tracegrade.label"] = label
    body: dict[str, Any] = {
        "assessment_name": score.key,
        "trace_id": trace_id,
        "source": dict(SOURCE),
        "feedback": {"value": score.value},
        "metadata": metadata,
    }
    if score.reason:
        body["rationale"] = score.reason
    return body
