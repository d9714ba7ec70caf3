"""Builds the FFmpeg that dataio-video's portable wheel bundles.

    python packages/dataio-video/ffmpeg/build.py --zig-python PY --out DIR

prints the install prefix (``DIR/<key>/prefix``: ``include/``, and ``lib/``
with the shared libraries). The key hashes this file and
zig's version, so a change of version, checksum or flag builds afresh and
an unchanged one reuses the last build.

What it builds (docs/plugins.md, "The dataio-video wheel", says why):

- dav1d (BSD-2-Clause) as a static PIC library, FFmpeg's AV1 decoder;
- FFmpeg's libavutil, libavcodec, libavformat, libswscale and libswresample
  as shared libraries under the LGPL 2.1 or later (no ``--enable-gpl``, no
  ``--enable-nonfree``), with only the decoders, demuxers and parsers of
  the formats dataio-video reads, no programs, no network, and nothing
  autodetected from the build machine;

both compiled by ``zig cc`` against glibc 2.17, the manylinux2014 baseline,
with nasm for the SIMD code. maturin's auditwheel repair then copies the
libraries into the wheel (``dataio_video.libs/``, renamed with a hash).

The sources are Debian's copies of the upstream tarballs, pinned by
SHA-256. ``DATAIO_FFMPEG_TARBALL`` / ``DATAIO_DAV1D_TARBALL`` name a local
file or another URL of the same tarball where Debian's pool has moved on.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

FFMPEG = (
    "ffmpeg-5.1.9",
    "http://deb.debian.org/debian/pool/main/f/ffmpeg/ffmpeg_5.1.9.orig.tar.xz",
    "d9b593bb2ba93d4b50f74177e0cdcd41747e708596367deed0c30348a71dd176",
)
DAV1D = (
    "dav1d-1.0.0",
    "http://deb.debian.org/debian/pool/main/d/dav1d/dav1d_1.0.0.orig.tar.xz",
    "51737db7e4897e599684f873a4725176dd3c779e639411d7c4fce134bb5ebb82",
)
ZIG_TARGET = "x86_64-linux-gnu.2.17"
HERE = Path(__file__).resolve().parent
LICENSES = {"FFmpeg-LGPL-2.1.txt": f"{FFMPEG[0]}/COPYING.LGPLv2.1", "dav1d-BSD-2-Clause.txt": f"{DAV1D[0]}/COPYING"}

# What dataio-video decodes. configure adds what these select (the bitstream
# filters a decoder needs, the shared DSP code).
VIDEO_DECODERS = "h264 hevc vp8 vp9 libdav1d mpeg4 mpeg1video mpeg2video mjpeg prores theora h263 msmpeg4v3"
AUDIO_DECODERS = (
    "aac aac_latm mp3float mp2float opus vorbis flac alac ac3 eac3 "
    "pcm_s16le pcm_s16be pcm_s24le pcm_s32le pcm_f32le pcm_f64le pcm_u8 pcm_mulaw pcm_alaw"
)
DEMUXERS = "mov matroska avi mpegts mpegps mpegvideo m4v h264 hevc ivf obu mp3 aac ac3 wav ogg flac"
PARSERS = "h264 hevc vp8 vp9 av1 mpeg4video mpegvideo mjpeg aac aac_latm mpegaudio opus vorbis flac ac3"
FFMPEG_FLAGS = [
    "--enable-shared", "--disable-static", "--enable-pic",
    "--disable-programs", "--disable-doc", "--disable-network", "--disable-autodetect",
    "--disable-everything", "--disable-avdevice", "--disable-avfilter", "--disable-postproc",
    "--enable-swscale", "--enable-swresample", "--enable-libdav1d",
    "--enable-decoder=" + ",".join((VIDEO_DECODERS + " " + AUDIO_DECODERS).split()),
    "--enable-demuxer=" + ",".join(DEMUXERS.split()),
    "--enable-parser=" + ",".join(PARSERS.split()),
    "--pkg-config-flags=--static",
]


def fetch(name: str, url: str, sha256: str, env_var: str, downloads: Path) -> Path:
    """The tarball, checked against its SHA-256 (a local path or URL in env_var replaces url)."""
    source = os.environ.get(env_var) or url
    dest = downloads / f"{name}.tar.xz"
    if not dest.is_file():
        downloads.mkdir(parents=True, exist_ok=True)
        part = dest.with_suffix(".part")
        if Path(source).is_file():
            shutil.copyfile(source, part)
        else:
            with urllib.request.urlopen(source, timeout=120) as resp, open(part, "wb") as out:
                shutil.copyfileobj(resp, out)
        part.rename(dest)
    digest = hashlib.sha256(dest.read_bytes()).hexdigest()
    if digest != sha256:
        dest.unlink()
        sys.exit(f"{source}: SHA-256 {digest}, expected {sha256} (set {env_var} to a copy of {name}'s tarball)")
    return dest


def unpack(tarball: Path, name: str, into: Path) -> Path:
    shutil.rmtree(into / name, ignore_errors=True)
    with tarfile.open(tarball) as tf:
        tf.extractall(into, filter="data")
    return into / name


def zig_wrappers(zig_python: Path, bindir: Path) -> dict[str, str]:
    """cc/ar/ranlib scripts that run zig through its Python package, for configure and meson."""
    bindir.mkdir(parents=True, exist_ok=True)
    tools = {"cc": f"cc -target {ZIG_TARGET}", "ar": "ar", "ranlib": "ranlib"}
    paths = {}
    for tool, args in tools.items():
        path = bindir / f"zig-{tool}"
        path.write_text(f'#!/bin/sh\nexec "{zig_python}" -m ziglang {args} "$@"\n')
        path.chmod(0o755)
        paths[tool] = str(path)
    return paths


def run(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> None:
    with open(log, "ab") as out:
        out.write(f"\n$ {' '.join(cmd)}\n".encode())
        out.flush()
        code = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    if code:
        sys.exit(f"{' '.join(cmd[:2])} failed ({code}) in {cwd}; the end of {log}:\n" + log.read_text()[-4000:])


def build(zig_python: Path, out: Path, jobs: int) -> Path:
    zig_version = subprocess.run([str(zig_python), "-m", "ziglang", "version"], capture_output=True, text=True,
                                 check=True).stdout.strip()
    key = hashlib.sha256(Path(__file__).read_bytes() + zig_version.encode()).hexdigest()[:16]
    root = out / key
    prefix = root / "prefix"
    if (root / "done").is_file():
        return prefix
    shutil.rmtree(root, ignore_errors=True)
    work = root / "work"
    work.mkdir(parents=True)
    log = root / "build.log"
    zig = zig_wrappers(zig_python, root / "bin")
    tools_bin = str(zig_python.parent)
    env = {**os.environ, "PATH": f"{tools_bin}:{os.environ['PATH']}", "CC": zig["cc"], "AR": zig["ar"],
           "PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig")}
    env.pop("PKG_CONFIG_LIBDIR", None)

    dav1d = unpack(fetch(*DAV1D, "DATAIO_DAV1D_TARBALL", out / "downloads"), DAV1D[0], work)
    run([f"{tools_bin}/meson", "setup", "build", f"--prefix={prefix}", "--libdir=lib", "--buildtype=release",
         "--default-library=static", "-Db_staticpic=true", "-Denable_tools=false", "-Denable_tests=false"],
        dav1d, env, log)
    run([f"{tools_bin}/ninja", "-C", "build", f"-j{jobs}", "install"], dav1d, env, log)

    ffmpeg = unpack(fetch(*FFMPEG, "DATAIO_FFMPEG_TARBALL", out / "downloads"), FFMPEG[0], work)
    run(["./configure", f"--prefix={prefix}", f"--cc={zig['cc']}", f"--ld={zig['cc']}", f"--ar={zig['ar']}",
         f"--ranlib={zig['ranlib']}", *FFMPEG_FLAGS], ffmpeg, env, log)
    # configure finds sysctl() in zig's glibc 2.17 stubs, but zig's headers are
    # a newer glibc's, which dropped <sys/sysctl.h>: libavutil/cpu.c would not build.
    config_h = ffmpeg / "config.h"
    config_h.write_text(config_h.read_text().replace("#define HAVE_SYSCTL 1", "#define HAVE_SYSCTL 0"))
    run(["make", f"-j{jobs}"], ffmpeg, env, log)
    run(["make", "install"], ffmpeg, env, log)

    # The wheel ships the licences from packages/dataio-video/licenses/; a new
    # version whose licence text changed must update them (and its notice).
    for ours, theirs in LICENSES.items():
        if (HERE.parent / "licenses" / ours).read_bytes() != (work / theirs).read_bytes():
            sys.exit(f"licenses/{ours} differs from {theirs} of the sources: copy it and review NOTICE-bundled.md")
    shutil.rmtree(work)
    (root / "done").write_text(f"{FFMPEG[0]} {DAV1D[0]} zig {zig_version}\n")
    return prefix


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zig-python", type=Path, required=True, help="a Python with the ziglang, meson and ninja packages")
    parser.add_argument("--out", type=Path, required=True, help="where builds are kept, one folder per key")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    print(build(args.zig_python.absolute(), args.out.resolve(), args.jobs))


if __name__ == "__main__":
    main()
