"""cuFile (GPUDirect Storage) through ctypes: found with dlopen at first
use, never linked. Works in cuFile's compatibility mode too (no nvidia-fs
kernel module: cuFile then reads through the page cache and copies).

Only the handful of calls a reader needs are bound: driver open/close,
handle register/deregister, and ``cuFileRead`` into device memory.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
import sys
import threading
from typing import Any

log = logging.getLogger("dataio.gds")

CANDIDATES = ("libcufile.so.0", "libcufile.so")
HANDLE_TYPE_OPAQUE_FD = 1


class CUfileError(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]


class _Handle(ctypes.Union):
    _fields_ = [("fd", ctypes.c_int), ("handle", ctypes.c_void_p)]


class CUfileDescr(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("handle", _Handle), ("fs_ops", ctypes.c_void_p)]


class _quiet_stdout:
    """cuFile writes diagnostics to fd 1; keep them out of our callers' output."""

    def __enter__(self) -> None:
        sys.stdout.flush()
        self.saved = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)

    def __exit__(self, *exc: object) -> None:
        os.dup2(self.saved, 1)
        os.close(self.saved)


def _wheel_dirs() -> list[str]:
    out = []
    for base in sys.path:
        out.extend(sorted(glob.glob(os.path.join(base, "nvidia", "cufile*", "lib"))))
    return out


class CuFile:
    """The loaded library and an open driver (process-wide, opened once)."""

    _lock = threading.Lock()
    _instance: CuFile | None = None
    _error: str | None = None

    def __init__(self, lib: ctypes.CDLL, path: str) -> None:
        self.lib = lib
        self.path = path
        lib.cuFileDriverOpen.restype = CUfileError
        lib.cuFileHandleRegister.restype = CUfileError
        lib.cuFileHandleRegister.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(CUfileDescr)]
        lib.cuFileHandleDeregister.argtypes = [ctypes.c_void_p]
        lib.cuFileRead.restype = ctypes.c_ssize_t
        lib.cuFileRead.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long, ctypes.c_long]
        with _quiet_stdout():
            status = lib.cuFileDriverOpen()
        if status.err != 0:
            raise OSError(f"cuFileDriverOpen failed (cuFile error {status.err}, CUDA error {status.cu_err})")
        self.version = self._version()

    def _version(self) -> str | None:
        fn = getattr(self.lib, "cuFileGetVersion", None)
        if fn is None:
            return None
        v = ctypes.c_int()
        fn.restype = CUfileError
        if fn(ctypes.byref(v)).err != 0:
            return None
        return f"{v.value // 1000}.{(v.value % 1000) // 10}"

    @classmethod
    def get(cls) -> CuFile:
        with cls._lock:
            if cls._instance is not None:
                return cls._instance
            if cls._error is not None:
                raise OSError(cls._error)
            # cuFile writes a cufile.log into the working directory unless told
            # otherwise; keep users' folders clean (their own setting wins).
            os.environ.setdefault("CUFILE_LOGFILE_PATH", os.devnull)
            # cuFile prints to stdout when it cannot reach a driver; ask the
            # loader first, so that a GPU-less host never gets that far.
            try:
                ctypes.CDLL("libcuda.so.1")
            except OSError as e:
                cls._error = f"no CUDA driver: {e}"
                raise OSError(cls._error) from None
            reasons = []
            for path in [os.path.join(d, c) for d in _wheel_dirs() for c in CANDIDATES] + list(CANDIDATES):
                if os.sep in path and not os.path.exists(path):
                    continue
                try:
                    lib = ctypes.CDLL(path)
                except OSError as e:
                    reasons.append(str(e))
                    continue
                try:
                    cls._instance = CuFile(lib, path)
                    log.debug("cuFile %s loaded from %s", cls._instance.version, path)
                    return cls._instance
                except OSError as e:
                    reasons.append(f"{path}: {e}")
            cls._error = "; ".join(reasons) or "libcufile.so.0 not found (pip install nvidia-cufile-cu12)"
            raise OSError(cls._error)

    def read(self, path: str, dev_ptr: int, size: int, file_offset: int, chunk: int = 64 << 20, threads: int = 4) -> None:
        """Reads ``size`` bytes at ``file_offset`` of ``path`` to device address ``dev_ptr``."""
        flags = os.O_RDONLY | getattr(os, "O_DIRECT", 0)
        try:
            fd = os.open(path, flags)
        except OSError:
            fd = os.open(path, os.O_RDONLY)  # filesystems without O_DIRECT: compat mode
        handle = ctypes.c_void_p()
        descr = CUfileDescr()
        descr.type = HANDLE_TYPE_OPAQUE_FD
        descr.handle.fd = fd
        try:
            status = self.lib.cuFileHandleRegister(ctypes.byref(handle), ctypes.byref(descr))
            if status.err != 0:
                raise OSError(f"{path}: cuFileHandleRegister failed (cuFile error {status.err})")
            try:
                spans = [(off, min(chunk, size - off)) for off in range(0, size, chunk)]
                errors: list[str] = []

                def work(span: tuple[int, int]) -> None:
                    off, n = span
                    got = self.lib.cuFileRead(handle, ctypes.c_void_p(dev_ptr), n, file_offset + off, off)
                    if got != n:
                        errors.append(f"{path}: cuFileRead returned {got} for {n} bytes at {file_offset + off}")

                if len(spans) == 1:
                    work(spans[0])
                else:
                    from concurrent.futures import ThreadPoolExecutor

                    with ThreadPoolExecutor(max_workers=threads) as pool:
                        list(pool.map(work, spans))
                if errors:
                    raise OSError(errors[0])
            finally:
                self.lib.cuFileHandleDeregister(handle)
        finally:
            os.close(fd)


def probe() -> dict[str, Any]:
    """Whether cuFile loads and its driver opens, with the reason when not."""
    try:
        lib = CuFile.get()
    except OSError as e:
        return {"available": False, "reason": str(e)}
    compat = os.environ.get("CUFILE_ENV_PATH_JSON")
    return {"available": True, "path": lib.path, "version": lib.version, "config": compat, "nvidia_fs": os.path.exists("/proc/driver/nvidia-fs")}
