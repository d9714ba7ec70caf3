"""The s3 workload: remote reads over the S3 protocol from a local server.

It runs only when the dataio-s3 plugin reports itself available (its row in
``dataio.capabilities.report()`` has status ``ok``) and boto3 is installed;
otherwise the report gets one row saying why.

dataio reads every object through the plugin (``decode_bytes`` over
``s3://`` URIs, 64 reads in flight); the peer is boto3 ``get_object`` on a
pool of 32 threads. The server is nginx serving the objects as files
(``dataio_bench.nginx``: path-style GETs, fast enough to show the clients);
moto's server answers only a few hundred GETs per second on a small machine,
so it is used only when nginx is not installed, and the report says which
server it was (with moto the row shows the server's limit, not the client's).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dataio._progress import Progress

from .harness import Cell
from .nginx import Nginx, nginx_binary
from .records import _BytesCell
from .workloads import DataioCell, Workload

# Made-up keys for the emulator (moto accepts any).
EMULATOR_KEY_ID = "AKIADATAIOBENCH00001"
EMULATOR_SECRET = "dataio-bench-emulator-secret"
BOTO_THREADS = 32


class DataioS3(DataioCell, _BytesCell):
    def start(self) -> None:
        import dataio

        dataio.configure_endpoint("s3", self.data["endpoint"])
        dataio.configure_credentials("s3", access_key_id=EMULATOR_KEY_ID, secret_access_key=EMULATOR_SECRET)
        super().start()

    def pipeline(self) -> Any:
        import dataio

        return dataio.pipeline(dataio.slot("data").decode_bytes(), dataio.batch(self.batch, prefetch=self.cfg["prefetch"]))

    def records(self) -> Any:
        return [{"data": u} for u in self.data["files"]]

    def items(self, b: Any) -> list[Any]:
        data = b["data"]
        return list(data) if not isinstance(data, list) else data


class Boto3S3(_BytesCell):
    LABEL = f"boto3 get_object, {BOTO_THREADS} threads"
    MODULES = ("boto3", "botocore.config")
    HINT = "uv pip install boto3"
    USES_TORCH = False

    def start(self) -> None:
        import boto3
        from botocore.config import Config

        self.client = boto3.client(
            "s3",
            endpoint_url=self.data["endpoint"],
            region_name="us-east-1",
            aws_access_key_id=EMULATOR_KEY_ID,
            aws_secret_access_key=EMULATOR_SECRET,
            config=Config(max_pool_connections=BOTO_THREADS),
        )
        self.pool = ThreadPoolExecutor(BOTO_THREADS)
        self.info = {"threads": BOTO_THREADS}

    def epoch(self) -> Iterator[Any]:
        bucket = self.data["bucket"]
        prefix = f"s3://{bucket}/"

        def get(uri: str) -> bytes:
            return self.client.get_object(Bucket=bucket, Key=uri[len(prefix) :])["Body"].read()

        group: list[bytes] = []
        for data in self.pool.map(get, self.data["files"]):
            group.append(data)
            if len(group) == self.batch:
                yield group
                group = []
        if group:
            yield group

    def close(self) -> None:
        self.pool.shutdown()


def plugin_row(name: str) -> dict[str, Any] | None:
    """The capability report's row for plugin package ``name`` (None: not installed)."""
    from dataio import capabilities

    return next((r for r in capabilities.report()["plugins"] if r["name"] == name), None)


class S3Workload(Workload):
    name = "s3"
    title = "remote reads (S3 protocol, local server)"

    def candidates(self) -> dict[str, type[Cell]]:
        return {"dataio": DataioS3, "boto3": Boto3S3}

    def unavailable(self) -> str | None:
        row = plugin_row("dataio-s3")
        if row is None:
            return "the dataio-s3 plugin is not installed here (pip install -e packages/dataio-s3)"
        if row["status"] != "ok":
            return f"dataio-s3 reports itself {row['status']!r}: {row['detail']}"
        if importlib.util.find_spec("boto3") is None:
            return "the boto3 peer is not installed (it is in the bench dependency group)"
        if nginx_binary() is None:
            for module in ("moto", "flask"):
                if importlib.util.find_spec(module) is None:
                    return "neither nginx (apt-get install nginx) nor moto[server] is installed to serve the objects"
        return None

    def config(self, args: argparse.Namespace) -> dict[str, Any]:
        return {**super().config(args), "batch": args.batch or 64}

    @contextmanager
    def prepared(self, args: argparse.Namespace, out: Path) -> Iterator[dict[str, Any]]:
        import numpy as np

        bucket = "dataio-bench"
        rng = np.random.default_rng(7)
        size = args.object_kb * 1024
        keys = [f"objects/{i:05d}.bin" for i in range(args.objects)]
        blobs = [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for _ in keys]
        files = [f"s3://{bucket}/{k}" for k in keys]
        if nginx_binary() is not None:
            with tempfile.TemporaryDirectory(prefix="dataio-bench-s3-") as root:
                for k, blob in zip(keys, blobs):
                    path = Path(root, bucket, k)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(blob)
                server = Nginx(Path(root), workers=max(1, os.cpu_count() or 1), access_log=False)
                try:
                    yield {"endpoint": server.endpoint, "bucket": bucket, "files": files, "object_bytes": size, "server": "nginx"}
                finally:
                    server.stop()
            return
        yield from self._moto(bucket, keys, blobs, files, size)

    @staticmethod
    def _moto(bucket: str, keys: list[str], blobs: list[bytes], files: list[str], size: int) -> Iterator[dict[str, Any]]:
        import boto3
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            endpoint = f"http://{host}:{port}"
            client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=EMULATOR_KEY_ID, aws_secret_access_key=EMULATOR_SECRET)
            client.create_bucket(Bucket=bucket)
            with Progress(len(keys), "[s3] uploading", "obj") as bar, ThreadPoolExecutor(8) as pool:
                for _ in pool.map(lambda kb: client.put_object(Bucket=bucket, Key=kb[0], Body=kb[1]), zip(keys, blobs)):
                    bar.update()
            yield {"endpoint": endpoint, "bucket": bucket, "files": files, "object_bytes": size, "server": "moto"}
        finally:
            server.stop()

    def describe(self, data: dict[str, Any], cfg: dict[str, Any]) -> str:
        server = (
            "nginx serving them as files on 127.0.0.1 (path-style S3 GETs; fast enough to show the clients)"
            if data["server"] == "nginx"
            else "a moto S3 server on 127.0.0.1 (server-bound: moto answers a few hundred GETs/s; install nginx to measure the clients)"
        )
        return f"{len(data['files'])} objects of {data['object_bytes'] // 1024} KiB from {server}, read whole into uint8 tensors, batches of {cfg['batch']}"
