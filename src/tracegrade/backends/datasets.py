"""References from a backend's dataset (``--references SCHEME://HOST:PORT/datasets/NAME``):
each item of the dataset is a references line (its ``id``, the sample's, and reference
fields), joined onto the records by id as a references file's lines are (see
:mod:`tracegrade.io.references`).

The URL is the backend's own (with its project, for a backend whose datasets belong to
one) followed by ``/datasets/NAME``; a dataset's name may hold ``/`` when quoted as
``%2F``.
"""

from __future__ import annotations

from os import PathLike

from ..io.references import References, read_references, references_from_lines
from .base import Address, BackendError, is_backend_url, parse_address

DATASETS = "datasets"
"""The path part that marks the rest of a backend URL as a dataset's name."""


def dataset_address(url: str) -> tuple[Address, str]:
    """The backend of the dataset URL ``url`` (the URL without ``/datasets/NAME``) and
    the dataset's name; BackendError when ``url`` names no dataset."""
    address = parse_address(url)
    path = address.path
    if len(path) < 2 or path[-2] != DATASETS:
        raise BackendError(
            f"{url}: a backend's references are a dataset: give "
            f"{address.scheme}://HOST:PORT/{DATASETS}/NAME (see docs/backends.md)"
        )
    head, _, _ = url.rstrip("/").rpartition(f"/{DATASETS}/")
    backend = Address(
        scheme=address.scheme,
        host=address.host,
        port=address.port,
        path=path[:-2],
        secure=address.secure,
        text=head,
    )
    return backend, path[-1]


def dataset_references(url: str, *, override: bool = False) -> References:
    """The items of the backend dataset ``url`` names, read and checked as references
    (errors name the URL and the item's place, from 1)."""
    from . import open_backend

    address, name = dataset_address(url)
    backend = open_backend(address)
    try:
        return references_from_lines(backend.dataset_references(name), url, override=override)
    finally:
        backend.close()


def load_references(given: str | PathLike[str], *, override: bool = False) -> References:
    """References from a file, or from a backend dataset when ``given`` is its URL."""
    if is_backend_url(given):
        assert isinstance(given, str)
        return dataset_references(given, override=override)
    return read_references(given, override=override)
