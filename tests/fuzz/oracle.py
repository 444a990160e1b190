"""What a mutant must do: convert, or fail with tracegrade's own error; never hang, never
lose a message unsaid, and give a sample that JSON writes and reads back equal.

:func:`judge` converts one mutant of a seed as ``convert_messages(mutant, source=NAME)``
does (and, when asked, as ``tracegrade convert --from NAME`` does, in this process) and
returns a :class:`Verdict`. The oracle:

1. no exception but a :class:`~tracegrade.errors.TracegradeError`;
2. no hang: each mutant has a time limit (a hang is reported, not waited out);
3. nothing lost unsaid: a mutant whose change replaced one value and kept the
   structure (see :mod:`tests.fuzz.mutations`) converts to at least as many messages as
   its seed did, unless an error was raised or something more was counted as left out
   (the :class:`~tracegrade.errors.ConversionWarning`). Emptying a text or a container
   may take the message that held only it, and more messages are allowed, since a
   changed id may make two things the seed read as one no longer the same. When the new
   value says something (is not null, empty or gone), no message that had text, calls
   or content parts in the seed's conversion comes out with none (unless the change
   sets a flag, which may say that a text is reasoning). Three changes are let pass: a
   key set to null that converts exactly as the key left out (null then says "absent",
   and what an absence means is the structure's business, which this rule does not
   judge); new text in an OTLP attribute's key or an event's name (a name no
   convention has is no LLM activity: not reading its span or event is right); and text
   replaced by text found whole in a message (a text a source parses into several
   messages, such as a ReAct turn, reads as what it now says);
4. what converts is a sample whose JSON reads back equal.
"""

from __future__ import annotations

import contextlib
import io
import signal
import threading
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fuzz.mutations import Mutation, to_json_text

from tracegrade import AIMessage, MultiTurnSample
from tracegrade.cli import main
from tracegrade.convert import convert_messages
from tracegrade.errors import ConversionWarning, TracegradeError

CONVERTED, ERROR, SKIPPED, FAILED = "converted", "tracegrade error", "counted skip", "FAILED"
OTLP_SOURCES = frozenset({"otel", "openinference"})


class Hang(BaseException):
    """A mutant ran past its time limit (a BaseException, so no converter's ``except
    Exception`` can swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` in this thread after ``seconds``; no limit outside the main
    thread, where signals cannot reach."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(*_: Any) -> None:
        raise Hang(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class Baseline:
    """A seed, and its own conversion: its messages, and the warnings of what it left
    out."""

    data: Any
    messages: list[Any]
    left_out: tuple[str, ...]


@dataclass(frozen=True)
class Verdict:
    """How a mutant ended: ``outcome`` is one of CONVERTED, ERROR, SKIPPED or FAILED;
    a failure says which rule it broke (``problem``) and how (``detail``)."""

    outcome: str
    problem: str = ""
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome == FAILED


@dataclass(frozen=True)
class Attempt:
    """How to convert a mutant: the source, the options, and whether to go through the
    command line too (``workdir`` then holds its files)."""

    source: str
    metadata: bool = False
    keep_invalid: bool = False
    auto_too: bool = False
    workdir: Path | None = None
    limit: float = 20.0


def convert(
    data: Any, attempt: Attempt, source: str | None = None
) -> tuple[list[Any], tuple[str, ...]]:
    """``data`` converted as ``attempt`` says, with the texts of the ConversionWarnings it
    gave (what it left out)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        messages = convert_messages(
            data,
            source=source or attempt.source,
            metadata=attempt.metadata,
            invalid_arguments="keep" if attempt.keep_invalid else "raise",
        )
    left_out = tuple(str(w.message) for w in caught if issubclass(w.category, ConversionWarning))
    return messages, left_out


def baseline(data: Any, source: str) -> Baseline:
    """The seed's conversion, which a mutant's is compared with (it must convert)."""
    messages, left_out = convert(data, Attempt(source))
    return Baseline(data, messages, left_out)


def is_empty(message: Any) -> bool:
    """Does the message carry nothing: no text, no calls, no content parts?"""
    parts = (message.metadata or {}).get("content_parts")
    calls = message.tool_calls if isinstance(message, AIMessage) else None
    return not message.content and not calls and not parts


def judge(mutant: Any, mutation: Mutation, attempt: Attempt, seed: Baseline) -> Verdict:
    """The verdict on one mutant (see the module's docstring)."""
    try:
        with time_limit(attempt.limit):
            verdict = _judge(mutant, mutation, attempt, seed)
            if not verdict.failed and attempt.auto_too:
                verdict = _auto(mutant, attempt) or verdict
            if not verdict.failed and attempt.workdir is not None:
                verdict = _command_line(mutant, attempt, attempt.workdir) or verdict
            return verdict
    except Hang as hang:
        return Verdict(FAILED, "hang", str(hang))


def _judge(mutant: Any, mutation: Mutation, attempt: Attempt, seed: Baseline) -> Verdict:
    try:
        messages, left_out = convert(mutant, attempt)
    except TracegradeError:
        return Verdict(ERROR)
    except Exception as error:
        return _crash(error)
    skipped = left_out != seed.left_out
    loss = None if skipped or _renames(mutation, attempt) else _loss(messages, mutation, seed)
    if loss is not None and not (
        _null_is_absent(mutant, mutation, attempt, messages)
        or _text_read_anew(mutant, mutation, seed, messages)
    ):
        return loss
    problem = round_trip(messages)
    if problem is not None:
        return problem
    return Verdict(SKIPPED if skipped else CONVERTED)


def _loss(messages: list[Any], mutation: Mutation, seed: Baseline) -> Verdict | None:
    """Rule 3: a message lost, or emptied, by a change of one value."""
    if mutation.keeps_count and len(messages) < len(seed.messages):
        return Verdict(
            FAILED,
            "message lost",
            f"{len(seed.messages)} messages became {len(messages)}, with no error and "
            "nothing more counted as left out",
        )
    if (
        mutation.says_something
        and len(messages) == len(seed.messages)
        and not _sets_flag(mutation, seed)
    ):
        for index, (before, after) in enumerate(zip(seed.messages, messages, strict=True)):
            if is_empty(after) and not is_empty(before):
                return Verdict(
                    FAILED,
                    "emptied",
                    f"message {index} ({before.type}) came out with no text, calls or "
                    "content parts, with no error",
                )
    return None


def _sets_flag(mutation: Mutation, seed: Baseline) -> bool:
    """Does the change set a flag (a boolean, or a null one) to true? A flag may say that
    a text is something else (Gemini's ``thought``: reasoning, kept in metadata only
    with ``metadata=True``), so its message may come out with no text."""
    return mutation.kind == "type:bool" and _at(seed.data, mutation.path) in (None, False)


def _renames(mutation: Mutation, attempt: Attempt) -> bool:
    """Does the change rename what an OTLP attribute or event is? Their names say what
    they are, and a name no convention has is no LLM activity: its span or event is
    rightly not read."""
    last = mutation.path[-1]
    return attempt.source in OTLP_SOURCES and last in ("key", "name") and mutation.writes_text


def _null_is_absent(mutant: Any, mutation: Mutation, attempt: Attempt, messages: list[Any]) -> bool:
    """Is a key set to null read exactly as the key left out (metadata aside, which may
    keep the null)? Then null says "absent", as JSON APIs use it, and what the key's
    absence means is the structure's business."""
    if mutation.kind != "type:null" or not isinstance(mutation.path[-1], str):
        return False
    absent = Mutation(mutation.path, "key:remove").apply(mutant)
    try:
        without, _ = convert(absent, attempt)
    except Exception:
        return False
    return list(map(_bare, without)) == list(map(_bare, messages))


def _bare(message: Any) -> Any:
    """A message less its metadata."""
    return message.replace(metadata=None)


def _text_read_anew(mutant: Any, mutation: Mutation, seed: Baseline, messages: list[Any]) -> bool:
    """Was text the seed holds replaced by text that is all there in a message? A text a
    source parses into several messages (a ReAct turn's action and observation) then
    reads as what it now says: nothing was lost."""
    if not isinstance(_at(seed.data, mutation.path), str):
        return False
    new = _at(mutant, mutation.path)
    if isinstance(new, list) and all(isinstance(item, str) for item in new):
        new = "\n".join(new)
    return isinstance(new, str) and any(new in message.content for message in messages)


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        data = data[step]
    return data


def round_trip(messages: list[Any]) -> Verdict | None:
    """A failure when the sample of ``messages`` cannot be written as JSON and read back
    equal; ``None`` when it can, or when the sample itself is refused (with tracegrade's
    error, as a file of records would report it)."""
    try:
        sample = MultiTurnSample(user_input=messages)
    except TracegradeError:
        return None
    except Exception as error:
        return _crash(error)
    try:
        back = MultiTurnSample.from_json(sample.to_json())
    except Exception as error:
        return Verdict(FAILED, "unwritable", _exception_text(error))
    if back != sample:
        return Verdict(FAILED, "round trip", f"read back as {back!r}")
    return None


def _auto(mutant: Any, attempt: Attempt) -> Verdict | None:
    """A failure of ``source="auto"`` on the mutant (rules 1 and 4 only)."""
    try:
        messages, _ = convert(mutant, attempt, source="auto")
    except TracegradeError:
        return None
    except Exception as error:
        return _crash(error, "(auto) ")
    return round_trip(messages)


def _command_line(mutant: Any, attempt: Attempt, workdir: Path) -> Verdict | None:
    """A failure of ``tracegrade convert --from SOURCE`` on the mutant written to a file:
    an exception out of ``main``, an exit code other than 0 or 3, or a sample written
    that does not read back."""
    suffix = ".json" if attempt.source in OTLP_SOURCES else ".jsonl"
    given = workdir / f"mutant{suffix}"
    given.write_text(to_json_text(mutant) + "\n")
    out = workdir / "samples.jsonl"
    out.unlink(missing_ok=True)
    argv = ["convert", "--from", attempt.source, str(given), str(out)]
    argv[1:1] = ["--metadata"] * attempt.metadata + [
        "--keep-invalid-arguments"
    ] * attempt.keep_invalid
    told = io.StringIO()
    try:
        with contextlib.redirect_stderr(told), contextlib.redirect_stdout(told):
            code = main(argv)
    except Exception as error:
        return _crash(error, "(command line) ")
    if code not in (0, 3):
        return Verdict(FAILED, "command line", f"exit code {code}: {told.getvalue()[-500:]}")
    if code == 0:
        for line in out.read_bytes().splitlines():
            try:
                MultiTurnSample.from_json(line)
            except Exception as error:
                return Verdict(FAILED, "command line", f"wrote a bad sample: {error}")
    return None


def _crash(error: BaseException, where: str = "") -> Verdict:
    return Verdict(FAILED, "exception", where + _exception_text(error))


def _exception_text(error: BaseException) -> str:
    """The exception's type and text (cut short), and where it was raised."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [frame for frame in frames if "tracegrade" in frame.filename] or frames
    place = f" at {Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else ""
    text = str(error)
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(error).__name__}: {text}{place}"
