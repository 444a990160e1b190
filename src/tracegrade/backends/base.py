"""What every observability backend offers: its address, the filters of a pull, the scores
of a push, and the :class:`Backend` protocol each one implements.

A backend is named by a URL, ``SCHEME://HOST[:PORT]/PROJECT`` (plain HTTP) or
``SCHEME+https://HOST[:PORT]/PROJECT`` (TLS), where ``SCHEME`` is one of
:data:`SCHEMES`; an empty host (``langfuse:///PROJECT``) means the host the backend's
own environment variable names, or its public service. Each backend module says what
its PROJECT is (a Phoenix project, an MLflow experiment, ...), and may take more forms.
Credentials never appear in the URL: they come from the environment variables each
backend documents.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import unquote, urlsplit

from ..errors import TracegradeError

if TYPE_CHECKING:
    from ..convert._base import Skipped
    from ..model.decoding import Outcome
    from ..model.origin import Origin
    from ..model.samples import SampleId

SCHEMES = ("phoenix", "mlflow", "langfuse", "langsmith", "otlp")
"""The backend URL schemes; each is served by the module of its name in this package,
whose ``connect(address)`` returns its :class:`Backend` (``otlp`` only pushes)."""

GroupBy = Literal["trace", "session"]


class BackendError(TracegradeError, RuntimeError):
    """A backend refused or failed a request (after the retries), or a backend URL or
    filter it cannot serve. The message names the backend and the request, never a
    credential."""


class UnsupportedError(BackendError):
    """The backend cannot do what was asked (pull from an OTLP endpoint, datasets from
    a backend that has none)."""


@dataclass(frozen=True)
class Address:
    """A backend URL taken apart. ``host`` is ``None`` when the URL leaves it to the
    backend's environment variable; ``path`` holds the decoded parts after the host."""

    scheme: str
    host: str | None
    port: int | None
    path: tuple[str, ...]
    secure: bool
    text: str

    @property
    def project(self) -> str | None:
        """The first part of the path: the project (or experiment) the URL names."""
        return self.path[0] if self.path else None

    def http_base(self, default: str | None = None) -> str:
        """``http(s)://HOST[:PORT]`` of the backend, or ``default`` (an environment
        variable's URL, the public service) when the URL names no host."""
        if self.host is None:
            if default is None:
                raise BackendError(f"{self.text}: name the host (SCHEME://HOST:PORT/...)")
            return default.rstrip("/")
        port = f":{self.port}" if self.port is not None else ""
        return f"{'https' if self.secure else 'http'}://{self.host}{port}"

    def __str__(self) -> str:
        return self.text


def is_backend_url(text: object) -> bool:
    """Whether ``text`` is a backend URL (its scheme, before any ``+https``, is one of
    :data:`SCHEMES`), as opposed to a path."""
    if not isinstance(text, str) or "://" not in text:
        return False
    scheme = text.partition("://")[0].lower()
    return scheme.partition("+")[0] in SCHEMES


def parse_address(text: str) -> Address:
    """``text`` taken apart as a backend URL; BackendError naming the rule it breaks."""
    if not is_backend_url(text):
        known = ", ".join(f"{name}://" for name in SCHEMES)
        raise BackendError(f"{text!r} is not a backend URL (one of {known})")
    parts = urlsplit(text)
    scheme, _, transport = parts.scheme.lower().partition("+")
    if transport not in ("", "http", "https"):
        raise BackendError(f"{text}: {scheme}+{transport} is not a transport (use +https)")
    if parts.username is not None or parts.password is not None:
        raise BackendError(
            f"{scheme}://...: credentials do not belong in the URL; set the backend's "
            "environment variables instead (docs/backends.md)"
        )
    if parts.query or parts.fragment:
        raise BackendError(f"{text}: a backend URL takes no query or fragment; use the filters")
    try:
        port = parts.port
    except ValueError as error:
        raise BackendError(f"{text}: {error}") from None
    path = tuple(unquote(part) for part in parts.path.split("/") if part)
    return Address(
        scheme=scheme,
        host=parts.hostname or None,
        port=port,
        path=path,
        secure=transport == "https",
        text=text,
    )


@dataclass(frozen=True)
class PullFilters:
    """Which traces a pull reads. Times are compared with each trace's start (a time
    without a zone is UTC, as :func:`~tracegrade.backends.traces.pull` takes it); ``None``
    and empty tuples filter nothing. ``metadata`` pairs must all match; ``tags`` must
    all be on the trace. ``limit`` caps the conversations read. ``group_by`` makes one
    conversation per trace, or per session (thread) across its traces."""

    since: datetime | None = None
    until: datetime | None = None
    trace_ids: tuple[str, ...] = ()
    session_ids: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    metadata: tuple[tuple[str, str], ...] = ()
    limit: int | None = None
    group_by: GroupBy = "trace"

    def __post_init__(self) -> None:
        for name in ("since", "until"):  # naive: UTC, never the machine's local time
            moment = getattr(self, name)
            if moment is not None and moment.tzinfo is None:
                object.__setattr__(self, name, moment.replace(tzinfo=timezone.utc))
        if self.limit is not None and self.limit < 1:
            raise BackendError(f"limit must be 1 or more, not {self.limit}")
        if self.since and self.until and self.since >= self.until:
            raise BackendError(f"since ({self.since}) must come before until ({self.until})")


@dataclass(frozen=True)
class PushedScore:
    """One metric's score of one sample, as it is sent to a backend.

    ``value`` is ``None`` when the metric did not apply (``label`` then says
    ``not applicable``); ``label`` is ``pass``/``fail`` when the metric has a pass
    mark. ``key`` names the score where it lands (``tracegrade.METRIC``): a backend
    writes one score per (target, key), so a second push of it updates the first.
    """

    origin: Origin
    sample_id: SampleId
    metric: str
    value: float | None
    reason: str
    label: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The score's name where it lands."""
        return f"tracegrade.{self.metric}"


@dataclass
class PushOutcome:
    """What one batch of a push did: how many scores were written anew, updated (an
    earlier push's score of the same key), and refused, each refusal with its reason.
    ``unattributed`` holds refusals the backend counted without saying which scores they
    were (an OTLP receiver's partial success): (how many, the backend's words). Those
    scores cannot be told from the accepted ones, so they are not sent again."""

    created: int = 0
    updated: int = 0
    refused: list[tuple[PushedScore, str]] = field(default_factory=list)
    unattributed: list[tuple[int, str]] = field(default_factory=list)


class Backend(Protocol):
    """An observability backend's client: reads traces as samples, writes scores."""

    address: Address

    def pull(self, filters: PullFilters, skipped: Skipped) -> Iterator[Outcome]:
        """Every conversation the filters select, as a sample carrying its
        :class:`~tracegrade.model.origin.Origin` or the RecordError that says why the
        trace is not one; what the converters leave out is counted in ``skipped``.
        Pages through the backend's API as it goes."""
        ...

    def push(self, scores: Sequence[PushedScore]) -> PushOutcome:
        """Write one batch of scores, each replacing the score of the same key on the
        same target if there is one. Raises BackendError when the backend cannot be
        reached or refuses the whole batch (after retries)."""
        ...

    def dataset_references(self, name: str) -> Iterator[dict[str, Any]]:
        """Each item of the backend's dataset ``name`` as a references line (``id``
        plus reference fields, see :mod:`tracegrade.io.references`);
        UnsupportedError for a backend without datasets."""
        ...

    def close(self) -> None:
        """Release the connections."""
        ...


EARLIEST = datetime.min.replace(tzinfo=timezone.utc)
"""Where a trace without a readable start sorts: before every other."""


def iso_time(text: object) -> datetime | None:
    """``text`` read as an ISO 8601 time (``Z`` for UTC; UTC when it names no zone, as
    the backends' APIs write it); ``None`` when it is not text that reads as a time."""
    if not isinstance(text, str):
        return None
    try:
        found = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=timezone.utc)
