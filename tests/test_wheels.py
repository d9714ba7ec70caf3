"""The wheels install as a user installs them: ``dataio[s3,rdma]`` into a fresh virtualenv.

``nox -s tests`` builds the wheels (``build_wheels`` in noxfile.py, the code
behind ``nox -s wheels``, with the ``wheel-check`` profile) and names the folder in
``DATAIO_WHEELHOUSE``; the build already checked each wheel's tag, LICENSE,
README and glibc needs. Here each test makes a new virtualenv with uv,
installs the third-party dependencies from the registry, then our packages
with ``--no-index --find-links WHEELHOUSE`` only, so the registry's unrelated
``dataio`` (0.0.5) can never be taken, and runs the installed code.
"""

from __future__ import annotations

import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def wheelhouse() -> Path:
    folder = os.environ.get("DATAIO_WHEELHOUSE")
    if not folder:
        pytest.fail(
            "DATAIO_WHEELHOUSE is not set: run these through `python3 -m nox -s tests`, or build with "
            "`python3 -m nox -s wheels -- DIR` and set DATAIO_WHEELHOUSE=DIR"
        )
    return Path(folder)


def wheel_metadata(wheelhouse: Path) -> dict[str, email.message.Message]:
    """Each wheel's METADATA, by normalized project name."""
    metas = {}
    for wheel in wheelhouse.glob("*.whl"):
        with zipfile.ZipFile(wheel) as zf:
            name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            meta = email.parser.Parser().parsestr(zf.read(name).decode())
        metas[canonicalize_name(meta["Name"])] = meta
    return metas


def third_party_requirements(metas: dict[str, email.message.Message], root: str) -> list[str]:
    """What ``root`` needs from outside the wheelhouse, following our wheels' requirements and extras."""
    needed: list[str] = []
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [Requirement(root)]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name not in metas:
            extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
            needed.append(f"{req.name}{extras}{req.specifier}")
            continue
        key = (name, frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        for line in metas[name].get_all("Requires-Dist") or []:
            dep = Requirement(line)
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in (req.extras or {""})):
                todo.append(dep)
    return sorted(set(needed))


def fresh_venv(path: Path) -> Path:
    uv = shutil.which("uv")
    assert uv, "uv is needed to make the virtualenvs (pip install uv)"
    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(path)], check=True)
    return path / "bin" / "python"


def install(python: Path, wheelhouse: Path, requirement: str) -> None:
    """Third-party dependencies from the registry, then ours from the wheelhouse alone."""
    uv = shutil.which("uv")
    deps = third_party_requirements(wheel_metadata(wheelhouse), requirement)
    if deps:
        subprocess.run([uv, "pip", "install", "-q", "--python", str(python), *deps], check=True)
    # --no-cache: uv takes a find-links wheel for immutable, as a registry's,
    # and keys its cache by file name; a wheelhouse rebuilt at the same path
    # (every CI run's) would otherwise install the first build ever cached.
    subprocess.run(
        [uv, "pip", "install", "-q", "--no-cache", "--python", str(python), "--no-index", "--find-links", str(wheelhouse),
         requirement],
        check=True,
    )
    stale = installed_differs(python, wheelhouse)
    assert not stale, f"the venv's files differ from the wheelhouse's wheels: {stale}"


def wheel_record(lines: str) -> dict[str, str]:
    """A RECORD's file hashes by path, leaving out the .dist-info files (installers add and rewrite those)."""
    record = {}
    for line in lines.splitlines():
        path, digest, *_ = line.rsplit(",", 2) + [""]
        if digest and ".dist-info/" not in path:
            record[path] = digest
    return record


def installed_differs(python: Path, wheelhouse: Path) -> list[str]:
    """The files of our wheels that the venv holds with other contents (empty: it installed these wheels)."""
    site = next((python.parent.parent / "lib").glob("python3*/site-packages"))
    differs = []
    for wheel in wheelhouse.glob("*.whl"):
        with zipfile.ZipFile(wheel) as zf:
            record_name = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
            expected = wheel_record(zf.read(record_name).decode())
        installed_record = site / record_name
        if not installed_record.is_file():
            continue  # not part of this install
        got = wheel_record(installed_record.read_text())
        differs += [f"{wheel.name}: {path}" for path, digest in expected.items() if got.get(path) != digest]
    return differs


def run_python(python: Path, code: str, **kw) -> subprocess.CompletedProcess[str]:
    # Run from a folder outside the checkout, so nothing of the source tree is imported.
    return subprocess.run([str(python), "-c", code], check=False, capture_output=True, text=True, cwd=python.parent, **kw)


def test_third_party_requirements_follow_the_extras() -> None:
    core = email.parser.Parser().parsestr(
        "Name: dataio\nRequires-Dist: pluggy>=1.5\nRequires-Dist: dataio-s3==0.1.0; extra == 's3'\n"
        "Requires-Dist: pyarrow>=14; extra == 'parquet'\n\n"
    )
    s3 = email.parser.Parser().parsestr("Name: dataio-s3\nRequires-Dist: dataio==0.1.0\nRequires-Dist: botocore>=1.34\n\n")
    metas = {"dataio": core, "dataio-s3": s3}
    assert third_party_requirements(metas, "dataio[s3]") == ["botocore>=1.34", "pluggy>=1.5"]
    assert third_party_requirements(metas, "dataio") == ["pluggy>=1.5"]


def test_installed_differs_finds_files_not_from_the_wheel(tmp_path: Path) -> None:
    """The guard against a cached older build of a wheel with the same name (uv's cache, on CI)."""
    wheelhouse, site = tmp_path / "wh", tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    wheelhouse.mkdir()
    (site / "zz-0.1.0.dist-info").mkdir(parents=True)
    (tmp_path / "venv" / "bin").mkdir()
    python = tmp_path / "venv" / "bin" / "python"
    record = "zz/__init__.py,sha256=new,5\nzz/_native.abi3.so,sha256=same,9\nzz-0.1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheelhouse / "zz-0.1.0-py3-none-any.whl", "w") as zf:
        zf.writestr("zz-0.1.0.dist-info/RECORD", record)
    installed = site / "zz-0.1.0.dist-info" / "RECORD"
    installed.write_text(record.replace("sha256=new", "sha256=old") + "zz-0.1.0.dist-info/INSTALLER,sha256=x,2\n")
    assert installed_differs(python, wheelhouse) == ["zz-0.1.0-py3-none-any.whl: zz/__init__.py"]
    installed.write_text(record + "zz-0.1.0.dist-info/INSTALLER,sha256=x,2\n")
    assert installed_differs(python, wheelhouse) == []


def test_dataio_s3_rdma_installs_and_loads_both_plugins(wheelhouse: Path, tmp_path: Path) -> None:
    python = fresh_venv(tmp_path / "venv")
    install(python, wheelhouse, "dataio[s3,rdma]")

    proc = subprocess.run([str(python), "-m", "dataio", "--json"], check=False, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    rows = {row["package"]: row for row in report["plugins"]}
    assert report["dataio"] == wheel_metadata(wheelhouse)["dataio"]["Version"]
    assert rows["dataio-s3"]["status"] == "ok", rows["dataio-s3"]
    assert {"s3", "r2"} <= set(rows["dataio-s3"]["schemes"]), rows["dataio-s3"]
    rdma = rows["dataio-rdma"]
    # Loaded ("error" is a module that failed to import), with the real libfabric shim: a
    # build that missed the headers (zig does not search /usr/include) reports a stub.
    assert rdma["status"] in ("ok", "unavailable"), rdma
    assert "without libfabric's headers" not in rdma["detail"], rdma
    libfabric = next(lib for lib in report["libraries"] if lib["name"] == "libfabric")
    if libfabric["found"]:  # the tests session installs it: then the shim must use it
        assert rdma["status"] == "ok", rdma
    # The modules came from the wheels, not from the checkout.
    proc = run_python(python, "import dataio, dataio_s3, dataio_rdma; print(dataio.__file__, dataio_s3.__file__, dataio_rdma.__file__)")
    assert proc.returncode == 0, proc.stderr
    assert all(str(tmp_path / "venv") in f for f in proc.stdout.split()), proc.stdout


def test_the_installed_s3_plugin_reads_from_a_server(wheelhouse: Path, tmp_path: Path) -> None:
    """The zig-built S3 module signs, sends and reads (moto runs in this process's environment)."""
    import boto3
    from moto.server import ThreadedMotoServer

    python = fresh_venv(tmp_path / "venv")
    install(python, wheelhouse, "dataio[s3]")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        creds = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}
        s3 = boto3.client("s3", endpoint_url=endpoint, **creds)
        s3.create_bucket(Bucket="wheels")
        code = (
            "import dataio\n"
            f"dataio.configure_endpoint('s3', {endpoint!r})\n"
            "dataio.configure_credentials('s3', access_key_id='testing', secret_access_key='testing')\n"
            "dataio.write('s3://wheels/a/b.bin', b'0123456789')\n"
            "print(dataio.read('s3://wheels/a/b.bin', offset=2, size=5).decode())\n"
        )
        proc = run_python(python, code, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "23456"
        assert s3.get_object(Bucket="wheels", Key="a/b.bin")["Body"].read() == b"0123456789"
    finally:
        server.stop()


def test_the_core_alone_names_the_plugin_for_s3(wheelhouse: Path, tmp_path: Path) -> None:
    from dataio.plugins import install_hint  # the checkout's words, which the wheels' must match

    python = fresh_venv(tmp_path / "venv")
    install(python, wheelhouse, "dataio")
    code = (
        "import json, dataio\n"
        "try:\n"
        "    dataio.read('s3://bucket/key')\n"
        "except dataio.errors.UnsupportedSchemeError as exc:\n"
        "    print(json.dumps({'type': type(exc).__name__, 'message': str(exc)}))\n"
    )
    proc = run_python(python, code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), "reading s3:// without the plugin did not raise UnsupportedSchemeError"
    error = json.loads(proc.stdout)
    # The core's hint names the plugin and how its wheel installs, in the words of dataio.plugins.install_hint.
    assert "'s3'" in error["message"] or '"s3"' in error["message"], error
    assert "pip install --find-links wheelhouse/ dataio-s3" in error["message"], error
    assert install_hint("dataio-s3") in error["message"], error
    listed = run_python(python, "import dataio.plugins, importlib.metadata as m; print(sorted(d.name for d in m.distributions()))")
    assert "dataio-s3" not in listed.stdout and "dataio-rdma" not in listed.stdout, listed.stdout


def test_the_core_alone_decodes_images_and_names_the_media_and_text_plugins(wheelhouse: Path, tmp_path: Path) -> None:
    """The core wheel needs no FFmpeg and no tokenizers: it links neither,
    runs an image pipeline, and a plan naming decode_video or tokenize
    fails when it is built, naming the package to install."""
    from PIL import Image

    python = fresh_venv(tmp_path / "venv")
    install(python, wheelhouse, "dataio")
    Image.new("RGB", (24, 16), (200, 30, 60)).save(tmp_path / "red.jpg", quality=95)
    code = (
        "import json, subprocess, dataio, dataio._native as n\n"
        "libs = subprocess.run(['ldd', n.__file__], capture_output=True, text=True).stdout\n"
        "p = dataio.pipeline(dataio.slot('image').decode_image().resize(8, 8), dataio.batch(1))\n"
        f"with p.bind([{{'image': {str(tmp_path / 'red.jpg')!r}}}]).run('numpy') as loader:\n"
        "    b = next(iter(loader))\n"
        "errors = {}\n"
        "for op in ('decode_video', 'tokenize'):\n"
        "    try:\n"
        "        dataio.pipeline(getattr(dataio.slot('x'), op)(), dataio.batch(1))\n"
        "    except dataio.errors.PlanError as e:\n"
        "        errors[op] = str(e)\n"
        "print(json.dumps({'libs': libs, 'shape': list(b['image'].shape), 'red': int(b['image'][0, 4, 4, 0]), 'errors': errors}))\n"
    )
    proc = run_python(python, code)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert not any(lib in out["libs"] for lib in ("libavcodec", "libavformat", "libswscale", "libonig")), out["libs"]
    assert out["shape"] == [1, 8, 8, 3] and out["red"] > 150
    assert "dataio-video" in out["errors"]["decode_video"], out["errors"]
    assert "dataio-text" in out["errors"]["tokenize"], out["errors"]


def test_the_video_wheel_bundles_an_lgpl_ffmpeg_and_needs_none_from_the_system(wheelhouse: Path) -> None:
    """The wheel is manylinux2014 with FFmpeg inside: auditwheel finds no
    external library, and the module's needed FFmpeg libraries are the
    hash-named copies in dataio_video.libs/, not a system soname of one
    FFmpeg major (libavcodec.so.59 of Debian 12, .58 of Ubuntu 22.04)."""
    (wheel,) = wheelhouse.glob("dataio_video-*.whl")
    assert "manylinux2014_x86_64" in wheel.name, wheel.name
    show = subprocess.run([sys.executable, "-m", "auditwheel", "show", str(wheel)], capture_output=True, text=True,
                          check=True).stdout
    assert 'is consistent with the following platform tag: "manylinux_2_17_x86_64"' in " ".join(show.split()), show
    assert "external shared libraries" not in show, show
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        module = next(n for n in names if n.startswith("dataio_video/_native") and n.endswith(".so"))
        bundled = {Path(n).name for n in names if n.startswith("dataio_video.libs/")}
        licences = {Path(n).name for n in names if ".dist-info/licenses/" in n}
        with tempfile.TemporaryDirectory() as tmp:
            dynamic = subprocess.run(["readelf", "-d", zf.extract(module, tmp)], capture_output=True, text=True,
                                     check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    ffmpeg = [lib for lib in needed if lib.startswith(("libav", "libsw"))]
    assert sorted(lib.split("-")[0] for lib in ffmpeg) == ["libavcodec", "libavformat", "libavutil", "libswresample",
                                                          "libswscale"], needed
    assert set(ffmpeg) <= bundled, (ffmpeg, bundled)
    assert not any(re.fullmatch(r"lib(av|sw)\w+\.so\.\d+", lib) for lib in needed), needed
    assert "$ORIGIN/../dataio_video.libs" in dynamic, dynamic
    assert {"LICENSE", "FFmpeg-LGPL-2.1.txt", "dav1d-BSD-2-Clause.txt", "NOTICE-bundled.md"} <= licences, licences


def test_the_installed_video_wheel_decodes_with_its_own_ffmpeg(wheelhouse: Path, tmp_path: Path) -> None:
    """In a clean venv: H.264, VP9 and AV1 (dav1d) clips and AAC and Opus
    audio decode to what Debian's FFmpeg decodes, and every FFmpeg library
    the process maps comes from the wheel."""
    ffmpeg = shutil.which("ffmpeg")
    assert ffmpeg, "the test writes its media with the ffmpeg CLI (nox installs Debian's ffmpeg)"
    media = tmp_path / "media"
    media.mkdir()
    src = ["-f", "lavfi", "-i", "testsrc2=size=96x64:rate=25", "-t", "1", "-pix_fmt", "yuv420p", "-g", "10"]
    clips = {
        "h264.mp4": ["-c:v", "libx264", "-crf", "12"],
        "vp9.webm": ["-c:v", "libvpx-vp9", "-crf", "12", "-b:v", "0"],
        "av1.mkv": ["-c:v", "libaom-av1", "-cpu-used", "8", "-crf", "12"],
    }
    for name, codec in {**clips, "ffv1.mkv": ["-c:v", "ffv1"]}.items():
        subprocess.run([ffmpeg, "-v", "error", "-y", *src, *codec, str(media / name)], check=True)
    tone = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1"]
    sounds = {"aac.m4a": ["-c:a", "aac"], "opus.ogg": ["-c:a", "libopus"]}
    for name, codec in sounds.items():
        subprocess.run([ffmpeg, "-v", "error", "-y", *tone, *codec, str(media / name)], check=True)

    python = fresh_venv(tmp_path / "venv")
    install(python, wheelhouse, "dataio-video")
    code = (
        "import json, sys, numpy as np, dataio\n"
        "media = sys.argv[1]\n"
        "out = {}\n"
        f"for name in {sorted(clips)!r}:\n"
        "    frames = dataio.read_video(f'{media}/{name}', 0, 4)\n"
        "    np.save(f'{media}/{name}.npy', frames)\n"
        "p = dataio.pipeline(dataio.slot('video').decode_video(4, 2), dataio.batch(2))\n"
        f"with p.bind([{{'video': f'{{media}}/{{n}}'}} for n in {sorted(clips)!r}[:2]]).run('numpy') as loader:\n"
        "    out['batch'] = list(next(iter(loader))['video'].shape)\n"
        f"for name in {sorted(sounds)!r}:\n"
        "    np.save(f'{media}/{name}.npy', dataio.read_audio(f'{media}/{name}', mono=True))\n"
        "try:\n"
        "    dataio.read_video(f'{media}/ffv1.mkv', 0, 1)\n"
        "except Exception as e:\n"
        "    out['ffv1'] = f'{type(e).__name__}: {e}'\n"
        "maps = open('/proc/self/maps').read().split()\n"
        "out['libs'] = sorted({w for w in maps if '/libav' in w or '/libsw' in w})\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run([str(python), "-c", code, str(media)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["batch"] == [2, 4, 64, 96, 3], out
    # A codec the bundled build leaves out is a typed error naming it and the file.
    assert "ffv1" in out.get("ffv1", "") and "ffv1.mkv" in out["ffv1"], out
    assert len(out["libs"]) == 5, out["libs"]
    assert all("/dataio_video.libs/" in lib and lib.startswith(str(tmp_path / "venv")) for lib in out["libs"]), out["libs"]

    import numpy as np

    for name in clips:
        got = np.load(media / f"{name}.npy")
        ref = subprocess.run([ffmpeg, "-v", "error", "-i", str(media / name), "-frames:v", "4", "-f", "rawvideo",
                              "-pix_fmt", "rgb24", "-"], capture_output=True, check=True).stdout
        want = np.frombuffer(ref, np.uint8).reshape(4, 64, 96, 3)
        assert got.shape == want.shape, (name, got.shape)
        # Same FFmpeg version, another build and scaler path: equal within rounding.
        assert np.abs(got.astype(int) - want).mean() < 2.0, name
    for name in sounds:
        got = np.load(media / f"{name}.npy").reshape(-1)
        ref = subprocess.run([ffmpeg, "-v", "error", "-i", str(media / name), "-f", "f32le", "-ac", "1", "-"],
                             capture_output=True, check=True).stdout
        want = np.frombuffer(ref, np.float32)
        n = min(len(got), len(want))
        assert n > 40000 and abs(len(got) - len(want)) < 2048, (name, len(got), len(want))
        assert np.abs(got[:n] - want[:n]).max() < 1e-3, name
