"""An MLflow evaluation dataset's records as references lines (MLflow 3's
``/api/3.0/mlflow/datasets`` API): the dataset of that name linked to the experiment,
its records page by page."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .._json import dumps, loads
from ..io.references import REFERENCE_FIELDS
from ._http import HttpClient
from .base import BackendError

DATASETS = "/api/3.0/mlflow/datasets"


def dataset_id(client: HttpClient, experiment_id: str, name: str) -> str:
    """The id of the evaluation dataset ``name`` of the experiment; BackendError when
    there is none, or several."""
    if "'" in name or "\\" in name:
        raise BackendError(f"MLflow dataset {name!r}: a name with a quote cannot be searched")
    body = {
        "experiment_ids": [experiment_id],
        "filter_string": f"name = '{name}'",
        "max_results": 50,
    }
    reply = client.post(f"{DATASETS}/search", body, expect=dict)
    datasets = reply.get("datasets") or []
    if not isinstance(datasets, list):
        raise client.unexpected("POST", f"{DATASETS}/search", "a 'datasets' list")
    found = [
        str(dataset["dataset_id"])
        for dataset in datasets
        if isinstance(dataset, Mapping)
        and dataset.get("name") == name
        and dataset.get("dataset_id") is not None
    ]
    if len(found) != 1:
        what = "no evaluation dataset" if not found else f"{len(found)} evaluation datasets"
        raise BackendError(f"MLflow has {what} named {name!r} in experiment {experiment_id}")
    return found[0]


def _records(reply: Any) -> list[Any]:
    """A records page: MLflow sends the records as JSON text inside the JSON reply."""
    records = reply.get("records") if isinstance(reply, Mapping) else None
    if isinstance(records, str):
        records = loads(records) if records else []
    if not isinstance(records, list):
        raise BackendError(f"MLflow: GET {DATASETS}/.../records gave no records list")
    return records


def reference_lines(client: HttpClient, dataset: str, page_size: int) -> Iterator[dict[str, Any]]:
    """Each record of the dataset ``dataset`` (an id) as a references line."""
    params: dict[str, Any] = {"max_results": page_size}
    while True:
        reply = client.get(f"{DATASETS}/{dataset}/records", params=params)
        for record in _records(reply):
            yield reference_line(record)
        token = reply.get("next_page_token") if isinstance(reply, Mapping) else None
        if not token:
            return
        params["page_token"] = token


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def reference_line(record: Any) -> dict[str, Any]:
    """One record as a references line: its ``id`` the trace it was made from (source
    ``TRACE``), else the record's own id; its ``expectations`` as the reference fields
    they name, or ``expected_response`` alone as ``reference``, or else all of them as
    ``reference`` (JSON text)."""
    data = _mapping(record)
    source = _mapping(data.get("source"))
    facts = _mapping(source.get("source_data"))
    traced = facts.get("trace_id") if source.get("source_type") == "TRACE" else None
    line: dict[str, Any] = {"id": str(traced or data.get("dataset_record_id"))}
    expectations = data.get("expectations") or {}
    if not isinstance(expectations, Mapping):
        line["reference"] = dumps(expectations).decode()
    elif expectations and set(expectations) <= set(REFERENCE_FIELDS):
        line.update(expectations)
    elif set(expectations) == {"expected_response"}:
        answer = expectations["expected_response"]
        line["reference"] = answer if isinstance(answer, str) else dumps(answer).decode()
    elif expectations:
        line["reference"] = dumps(dict(expectations)).decode()
    return line
