"""The same pipeline over s3:// — against an S3 emulator this script starts itself.

Requires the dataio-s3 plugin (``dataio.plugins.install_hint`` says how to
install it) and, for the emulator, ``moto[server]``. The script starts moto's S3 server on
127.0.0.1, creates a bucket (with boto3, as an admin would), and from then
on uses dataio's public API only: it points the ``s3`` scheme at the
emulator with ``dataio.configure_endpoint`` and ``dataio.configure_credentials``,
uploads JPEGs with ``dataio.write``, lists them with ``dataio.glob``, runs the
image pipeline over their ``s3://`` URIs (64 reads in flight), and reads an
object into a caller-owned buffer with ``dataio.fetch_into``.

    python examples/s3_pipeline.py

Against real S3 or R2, drop the emulator and the endpoint: credentials come
from the platform (``method="default"``) and the bucket is yours.
"""

# requires-plugin: dataio-s3

from __future__ import annotations

import io
import logging
import sys

import numpy as np
from PIL import Image

import dataio

ACCESS_KEY_ID = "AKIAEXAMPLEEMULATOR1"  # the emulator accepts any keys
SECRET_ACCESS_KEY = "example-emulator-secret"
BUCKET = "dataio-example"


def plugin_status(name: str) -> tuple[str, str]:
    row = next((r for r in dataio.capabilities.report()["plugins"] if r["name"] == name), None)
    return ("not installed", "install it with " + dataio.plugins.install_hint(name)) if row is None else (row["status"], row["detail"])


def start_emulator():
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto logs every request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


def jpeg(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(240, 400)), int(rng.integers(240, 400))
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def main() -> int:
    status, detail = plugin_status("dataio-s3")
    if status != "ok":
        print(f"s3_pipeline.py needs the dataio-s3 plugin, which reports itself {status!r}: {detail}", file=sys.stderr)
        return 2
    server, endpoint = start_emulator()
    try:
        import boto3  # only to create the bucket, as an admin would

        boto3.client(
            "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY
        ).create_bucket(Bucket=BUCKET)

        # -- dataio's public API from here on ------------------------------------
        dataio.configure_endpoint("s3", endpoint)
        dataio.configure_credentials("s3", access_key_id=ACCESS_KEY_ID, secret_access_key=SECRET_ACCESS_KEY)

        for i in range(48):
            dataio.write(f"s3://{BUCKET}/train/{i:04d}.jpg", jpeg(i))
        dataio.write(f"s3://{BUCKET}/train/README.txt", b"not an image")
        uris = sorted(dataio.glob(f"s3://{BUCKET}/train/*.jpg"))
        print(f"{len(uris)} JPEGs under s3://{BUCKET}/train/; head of the first: {dataio.head(uris[0])}")

        pipe = dataio.pipeline(
            dataio.slot("image")
                .decode_image(mode="rgb")
                .resize_short(256)
                .center_crop(h=224, w=224)
                .normalize("imagenet"),
            dataio.batch(16, prefetch=4),
        )
        records = [{"key": u.rsplit("/", 1)[-1], "image": u} for u in uris]
        n = 0
        with pipe.bind(records).run("torch", concurrency=64) as loader:
            for batch in loader:
                assert tuple(batch["image"].shape[1:]) == (3, 224, 224)
                n += len(batch)
            print(loader.report())
        assert n == len(uris)

        buf = bytearray(1 << 20)
        size = dataio.fetch_into(uris[0], buf)
        assert bytes(buf[:size]) == jpeg(0)
        print(f"{n} images through the pipeline from s3://; fetch_into read {size:,} bytes into a caller buffer")
    finally:
        server.stop()
    print("s3_pipeline: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
