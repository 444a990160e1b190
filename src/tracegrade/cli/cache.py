"""``tracegrade cache info | prune | clear``: the judge cache, shown, trimmed or emptied.

A thin shell over :class:`~tracegrade.judge.cache.JudgeCache`'s ``info``, ``prune`` and
``clear``. The cache is ``--cache PATH``, else the judge's own (``$TRACEGRADE_JUDGE_CACHE``,
else ``~/.cache/tracegrade/judge.sqlite``). Its limits are ``--max-mb`` and
``--max-age-days`` (for ``prune``), else the project config's ``judge_cache_max_mb`` and
``judge_cache_max_age_days``, else ``$TRACEGRADE_JUDGE_CACHE_MAX_MB`` and
``$TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS``, else 1024 MB and no age limit. None of the
three makes a cache file that is not there yet; ``clear`` asks no question.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import JudgeCacheError, TracegradeError
from .evaluate import EXIT_INPUT, EXIT_OK, EXIT_USAGE, project_config

if TYPE_CHECKING:  # the judge loads only when the command runs
    from ..judge.cache import CacheInfo, Cleared, JudgeCache, Pruned


def _above_zero(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be above 0 (inf for no limit)")
    return value


def add_cache_command(commands: Any) -> None:
    """The ``cache`` command and its three actions, on the ``commands`` subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--cache",
        metavar="PATH",
        help="the cache file (default: $TRACEGRADE_JUDGE_CACHE, else "
        "~/.cache/tracegrade/judge.sqlite)",
    )
    common.add_argument("--config", metavar="FILE", help="read the limits from this TOML file")
    common.add_argument(
        "--no-config", action="store_true", help="ignore tracegrade.toml and pyproject.toml"
    )
    cache = commands.add_parser(
        "cache",
        help="show, prune or clear the judge cache",
        description="The judge's answers kept on disk: what they are, trimmed to the limits "
        "(judge_cache_max_mb and judge_cache_max_age_days in the project config, else "
        "$TRACEGRADE_JUDGE_CACHE_MAX_MB and $TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS, else "
        "1024 MB and no age limit), or emptied.",
    )
    actions = cache.add_subparsers(dest="action", required=True)
    actions.add_parser(
        "info",
        parents=[common],
        help="the cache's path, size, answers, dates and counts per model and prompt",
    )
    prune = actions.add_parser(
        "prune",
        parents=[common],
        help="delete the answers past the age limit and the least recently used ones over "
        "the size limit, and give the space back to the disk",
    )
    prune.add_argument(
        "--max-mb", type=_above_zero, metavar="MB", help="the size limit, in MB (2**20 bytes)"
    )
    prune.add_argument(
        "--max-age-days", type=_above_zero, metavar="DAYS", help="the age limit, in days"
    )
    actions.add_parser("clear", parents=[common], help="delete every answer (without asking)")


def run_cache(arguments: argparse.Namespace) -> int:
    """Carry out ``tracegrade cache ACTION``; returns the exit code."""
    try:
        cache = _open(arguments)
        if cache is None:
            print(
                "the judge cache is off ($TRACEGRADE_JUDGE_CACHE says so); name a cache file "
                "with --cache PATH"
            )
            return EXIT_OK
        if not cache.path.exists():
            print(_nothing_there(cache.path, arguments.action))
        elif arguments.action == "info":
            _print_info(cache.info())
        elif arguments.action == "prune":
            _print_pruned(cache.path, cache.prune(arguments.max_mb, arguments.max_age_days))
        else:
            _print_cleared(cache.path, cache.clear())
    except JudgeCacheError as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_INPUT
    except TracegradeError as error:  # a bad config file or environment variable
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _open(arguments: argparse.Namespace) -> JudgeCache | None:
    """The cache the arguments name, with its limits; None when it is turned off."""
    from ..judge.cache import JudgeCache, cache_turned_off, configured_limits, default_cache_path

    if arguments.cache is None and cache_turned_off():
        return None
    config = project_config(arguments)
    limits = configured_limits(
        config.judge_cache_max_mb if config else None,
        config.judge_cache_max_age_days if config else None,
    )
    path = Path(arguments.cache) if arguments.cache is not None else default_cache_path()
    return JudgeCache(path, max_mb=limits.max_mb, max_age_days=limits.max_age_days)


def _nothing_there(path: Path, action: str) -> str:
    if action == "info":
        return f"no judge cache at {path} yet (it is made when the judge first stores an answer)"
    return f"no judge cache at {path}: nothing to {action}"


def _print_info(info: CacheInfo) -> None:
    print(f"judge cache: {info.path}")
    print(f"size on disk: {_size(info.size)} (limits: {info.limits.describe()})")
    stored = ""
    if info.oldest is not None and info.newest is not None:
        stored = f", stored from {_date(info.oldest)} to {_date(info.newest)}"
    print(f"answers: {info.entries:,}{stored}")
    if info.expired:
        print(f"past the age limit: {info.expired:,} (never served; removed by the next prune)")
    if info.models:
        print("by model:")
        _print_counts(info.models)
    if info.prompts:
        print("by prompt:")
        prompts = info.prompts.items()
        _print_counts({f"{name} (version {version})": count for (name, version), count in prompts})


def _print_counts(counts: dict[str, int]) -> None:
    width = max(len(f"{count:,}") for count in counts.values())
    for name, count in counts.items():
        print(f"  {count:>{width},}  {name}")


def _print_pruned(path: Path, pruned: Pruned) -> None:
    sizes = _sizes(pruned.size_before, pruned.size_after)
    limits = pruned.limits.describe()
    if not pruned.removed:
        print(f"judge cache {path} is within its limits ({limits}): no answer removed; {sizes}")
        return
    reasons = []
    if pruned.expired:
        reasons.append(f"{pruned.expired:,} past the age limit")
    if pruned.evicted:
        reasons.append(f"{pruned.evicted:,} least recently used, over the size limit")
    print(
        f"pruned judge cache {path} to its limits ({limits}): removed "
        f"{_answers(pruned.removed)} ({', '.join(reasons)}); {sizes}"
    )


def _print_cleared(path: Path, cleared: Cleared) -> None:
    sizes = _sizes(cleared.size_before, cleared.size_after)
    print(f"cleared judge cache {path}: removed {_answers(cleared.entries)}; {sizes}")


def _answers(count: int) -> str:
    return f"{count:,} answer{'s' * (count != 1)}"


def _sizes(before: int, after: int) -> str:
    if before == after:
        return f"{_size(after)} on disk"
    return f"{_size(before)} -> {_size(after)} on disk"


def _size(size: int) -> str:
    """Bytes in KB under a MB, else in MB (of 2**10 and 2**20 bytes, as the limit)."""
    from ..judge.cache import MB

    if size < MB:
        return f"{size / 1024:,.0f} KB"
    return f"{size / MB:,.1f} MB"


def _date(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")
