"""A person's labels of samples, read from a JSON Lines or CSV file, for
``tracegrade agreement``.

Each label names a sample by ``id``, optionally the metric it is for (``metric``), and
the label itself (``label``): a verdict (``true``/``false``, ``pass``/``fail``,
``yes``/``no``, ``1``/``0``) or a grade (any other finite number). A file whose name
ends in ``.csv`` is CSV with a header row naming those columns; any other is JSON Lines,
one object per line. Other fields and columns (a note, who labelled) are left alone.
Every rule broken is a :class:`LabelsError` naming the file and the line."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from .._json import loads
from ..errors import FileReadError, InputError, os_problem
from ..io.files import check_input

__all__ = ["Label", "LabelsError", "read_labels"]

PASS_WORDS = frozenset({"true", "pass", "passed", "yes"})
FAIL_WORDS = frozenset({"false", "fail", "failed", "no"})
RULE = "a label is true/false, pass/fail, yes/no, 1/0 (a verdict) or a finite number (a grade)"


class LabelsError(InputError):
    """A labels file breaks a rule of the format (names the file and the line)."""


@dataclass(frozen=True)
class Label:
    """One label: the sample's ``id`` (as written: a CSV's are strings), the metric it
    is for (``None``: whichever metric is chosen), ``verdict`` when it was written as a
    pass/fail word or a JSON boolean, ``value`` as a number (a verdict as 1.0 or 0.0),
    and the line of the file it is on."""

    id: str | int
    metric: str | None
    value: float
    verdict: bool
    line: int

    @property
    def key(self) -> str:
        """What the label is matched by: its id as text (a CSV's ``7`` is row id ``7``)."""
        return str(self.id)


def read_labels(path: str | os.PathLike[str]) -> list[Label]:
    """Every label of the file, in its order. A missing or unreadable file is a
    FileReadError; a bad line, a bad label, or a second label of one sample for one
    metric is a LabelsError naming the file and the line."""
    file = Path(path)
    check_input(file, "labels")
    try:
        text = file.read_bytes().decode("utf-8-sig")
    except OSError as error:
        raise FileReadError(
            f"cannot read {file}: {os_problem(error)}", file, error.errno
        ) from error
    except UnicodeDecodeError as error:
        raise LabelsError(f"{file}: not UTF-8 text ({error.reason})") from None
    entries = _csv(file, text) if file.suffix.lower() == ".csv" else _jsonl(file, text)
    labels: list[Label] = []
    seen: dict[tuple[str, str | None], int] = {}
    for line, entry in entries:
        label = _label(file, line, entry)
        first = seen.setdefault((label.key, label.metric), line)
        if first != line:
            metric = "" if label.metric is None else f" for metric {label.metric}"
            raise LabelsError(
                f"{file}, line {line}: a second label of sample {label.id!r}{metric} "
                f"(the first is on line {first}); give each sample one label per metric"
            )
        labels.append(label)
    if not labels:
        raise LabelsError(f"{file}: holds no labels")
    return labels


def _jsonl(file: Path, text: str) -> Iterator[tuple[int, Mapping[str, object]]]:
    for line, content in enumerate(text.split("\n"), start=1):
        if not content.strip():
            continue
        try:
            entry = loads(content)
        except ValueError as error:
            raise LabelsError(f"{file}, line {line}: not JSON ({error})") from None
        if not isinstance(entry, dict):
            raise LabelsError(
                f"{file}, line {line}: not a JSON object; each line is one label, "
                '{"id": ..., "label": ..., "metric": ... (optional)}'
            )
        yield line, entry


def _csv(file: Path, text: str) -> Iterator[tuple[int, Mapping[str, object]]]:
    reader = csv.DictReader(text.splitlines(keepends=True))
    header = reader.fieldnames or []
    missing = [name for name in ("id", "label") if name not in header]
    if missing:
        raise LabelsError(
            f"{file}, line 1: the header has no {' or '.join(missing)} column "
            f"(it names {', '.join(map(repr, header)) or 'nothing'}); a labels CSV needs "
            "id and label, and may have metric"
        )
    for entry in reader:
        if None in entry:  # more cells than the header names
            raise LabelsError(f"{file}, line {reader.line_num}: more cells than the header names")
        if not any((value or "").strip() for value in entry.values()):
            continue  # an empty row, as spreadsheets leave
        yield reader.line_num, entry


def _label(file: Path, line: int, entry: Mapping[str, object]) -> Label:
    where = f"{file}, line {line}"
    sample_id = entry.get("id")
    if isinstance(sample_id, str):
        sample_id = sample_id.strip()
    if isinstance(sample_id, bool) or not isinstance(sample_id, (str, int)) or sample_id == "":
        raise LabelsError(f"{where}: the id {sample_id!r} is not a string or a whole number")
    metric = entry.get("metric")
    if isinstance(metric, str):
        metric = metric.strip() or None
    if metric is not None and not isinstance(metric, str):
        raise LabelsError(f"{where}: the metric {metric!r} is not a metric's name")
    if "label" not in entry:
        raise LabelsError(f"{where}: no label (the field 'label'); {RULE}")
    value, verdict = _value(where, entry["label"])
    return Label(sample_id, metric, value, verdict, line)


def _value(where: str, raw: object) -> tuple[float, bool]:
    """The label as a number and whether it was written as a verdict."""
    if isinstance(raw, bool):
        return (1.0 if raw else 0.0), True
    if isinstance(raw, str):
        word = raw.strip().lower()
        if word in PASS_WORDS:
            return 1.0, True
        if word in FAIL_WORDS:
            return 0.0, True
        try:
            number = float(word)
        except ValueError:
            raise LabelsError(f"{where}: the label {raw!r} is not one; {RULE}") from None
    elif isinstance(raw, (int, float)):
        try:
            number = float(raw)
        except OverflowError:  # an integer past the largest float
            number = math.inf
    else:
        raise LabelsError(f"{where}: the label {raw!r} is not one; {RULE}")
    if not math.isfinite(number):
        raise LabelsError(f"{where}: the label {raw!r} is not a finite number; {RULE}")
    return number, False
