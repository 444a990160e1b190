"""A real S3-compatible server (moto's server mode) on 127.0.0.1, for the tests of
inputs and outputs named by ``s3://`` URLs.

:func:`s3_server` starts one (in well under a second) on a free port, points boto's
environment at it (``AWS_ENDPOINT_URL``, test credentials, a region) for as long as it
runs, so that s3fs there and in the processes started meanwhile (a LocalCluster's
workers) finds it as it would find AWS, and makes a bucket. The credentials are
:data:`KEY_ID` and :data:`SECRET`, which no output may ever hold.
"""

from __future__ import annotations

import logging
import os
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

KEY_ID = "AKIATRACEGRADETEST42"
SECRET = "tracegrade-test-secret-never-written"
BUCKET = "tracegrade-test"


@dataclass(frozen=True)
class S3:
    """The server's address and its bucket, as ``s3://BUCKET``."""

    endpoint: str
    bucket: str = BUCKET

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def filesystem(self) -> object:
        import s3fs

        return s3fs.S3FileSystem(skip_instance_cache=True)


@contextmanager
def s3_server() -> Iterator[S3]:
    """A moto S3 server with a bucket, boto's environment pointing at it meanwhile."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    # moto keeps its buckets in this process, shared by every server started in it:
    # start from none
    urllib.request.urlopen(
        urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=30
    ).close()
    settings = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": KEY_ID,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    before = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()  # none made for another server's address
    try:
        s3fs.S3FileSystem(skip_instance_cache=True).mkdir(BUCKET)
        yield S3(endpoint)
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        server.stop()
