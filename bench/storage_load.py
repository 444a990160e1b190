"""What reading the input and writing the results through a URL costs: ``tracegrade
evaluate`` over the bench's conversations from a local path, from a ``file://`` URL
(fsspec's local filesystem) and from ``s3://`` on an S3-compatible server on 127.0.0.1
(moto's ``moto_server``, a process of its own on the same CPUs), the results written to
the same kind of place, with ``--workers 1`` and with ``--dask-local 2``. Each way runs
``repetitions`` times, interleaved (medians); every way's rows must be the same (a
rejected record would name its file; none is).

    .venv/bin/python bench/storage_load.py --size 50000
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from generate import dataset  # noqa: E402
from measure import run  # noqa: E402

METRICS = ["tool_call_f1", "tool_call_accuracy", "tool_correctness"]
WAYS = {"path": "", "file://": "file://", "s3:// (moto)": "s3://bench"}
FLAGS = {"--workers 1": ["--workers", "1"], "--dask-local 2": ["--dask-local", "2"]}


def _moto(env: dict[str, str]) -> subprocess.Popen[bytes]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    env.update(
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench-secret",
        AWS_DEFAULT_REGION="us-east-1",
    )
    os.environ.update(env)
    import s3fs

    for _ in range(100):
        try:
            s3fs.S3FileSystem(skip_instance_cache=True).mkdir("bench")
            return server
        except OSError:
            time.sleep(0.1)
    raise SystemExit("bench: moto_server did not answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=50_000)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--work", type=Path, default=BENCH / ".work")
    options = parser.parse_args()
    options.work.mkdir(parents=True, exist_ok=True)
    data = dataset(options.work, options.size)
    env = {**os.environ, "NO_COLOR": "1"}
    server = _moto(env)
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    fs.put_file(str(data), f"bench/{data.name}")
    try:
        cases = [(way, flag) for way in WAYS for flag in FLAGS]
        times: dict[tuple[str, str], list[float]] = {case: [] for case in cases}
        for repetition in range(options.repetitions):
            shift = repetition % len(cases)
            for way, flag in [*cases[shift:], *cases[:shift]]:
                prefix = WAYS[way]
                source = f"{prefix}/{data.name}" if way.startswith("s3") else f"{prefix}{data}"
                name = f"storage-{way[:2]}-{flag[2:6]}.jsonl"
                out = (
                    f"s3://bench/{name}"
                    if way.startswith("s3")
                    else f"{prefix}{options.work / name}"
                )
                metrics = [part for metric in METRICS for part in ("--metric", metric)]
                command = [sys.executable, "-m", "tracegrade", "evaluate", source, *metrics,
                           "--out", out, "--progress", "off", "--no-config", "--no-samples",
                           *FLAGS[flag]]  # fmt: skip
                print(f"bench: {way} {flag} ({repetition + 1})", file=sys.stderr, flush=True)
                measured = run(command, env=env)
                if measured.returncode not in (0, 1, 4):
                    raise SystemExit(f"bench: {way} {flag} failed ({measured.returncode})")
                times[(way, flag)].append(measured.seconds)
        first = (options.work / "storage-pa-work.jsonl").read_bytes()
        for local in options.work.glob("storage-*.jsonl"):
            if local.read_bytes() != first:
                raise SystemExit(f"bench: {local} holds other rows than the local run's")
        for name in fs.ls("bench", detail=False):
            if name.endswith(".jsonl") and "storage-" in name and fs.cat_file(name) != first:
                raise SystemExit(f"bench: {name} holds other rows than the local run's")
        print(f"\n{options.size:,} conversations, median of {options.repetitions}:\n")
        print("| input and --out | how | seconds | vs a path |")
        print("|---|---|---|---|")
        for way, flag in cases:
            seconds = statistics.median(times[(way, flag)])
            base = statistics.median(times[("path", flag)])
            print(f"| {way} | {flag} | {seconds:.2f} | {seconds / base:.2f}x |")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
