"""Flag values as argparse reads them: each refusal says what was typed and why."""

from __future__ import annotations

import argparse


def whole_number(text: str, least: int) -> int:
    """``text`` as a whole number of at least ``least``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least {least}")
    return value


def confidence_level(text: str) -> float:
    """``text`` as an interval's confidence level, between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1 (say 0.95)")
    return value


def seconds(text: str) -> float:
    """A positive, finite number of seconds given as text (ArgumentTypeError otherwise)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number of seconds")
    return value
