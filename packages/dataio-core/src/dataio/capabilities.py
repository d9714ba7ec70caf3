"""The capability report: what this host and this install can do.

``python -m dataio`` prints it; ``python -m dataio --json`` gives the same as
data; :func:`report` returns it as a dict.
"""

from __future__ import annotations

import glob as _glob
import os
import platform
import sys
from typing import Any

from . import _native
from ._plugins import BUILTIN, host

__all__ = ["report", "format_report", "nvidia_library_dirs"]


def nvidia_library_dirs() -> list[str]:
    """Library folders of NVIDIA's Python wheels (nvidia-cufile, nvidia-nvjpeg, ...)."""
    dirs: list[str] = []
    for base in sys.path:
        if base and os.path.isdir(os.path.join(base, "nvidia")):
            dirs.extend(sorted(_glob.glob(os.path.join(base, "nvidia", "*", "lib"))))
    return dirs


def _plugin_rows() -> list[dict[str, Any]]:
    infos = {p.name: p for p in host.plugins()}
    schemes_by_plugin: dict[str, list[str]] = {}
    for scheme, reg in sorted(host.backends().items()):
        schemes_by_plugin.setdefault(reg.plugin, []).append(scheme)
    ops_by_plugin: dict[str, list[str]] = {}
    for name, spec in sorted(host.ops().items()):
        if spec.plugin != BUILTIN:
            ops_by_plugin.setdefault(spec.plugin, []).append(f"{name} ({'native' if spec.native else 'python'})")
    rows: list[dict[str, Any]] = []
    reported: set[str] = set()
    for plugin, name, row in host.capability_rows():
        info = infos.get(plugin)
        reported.add(plugin)
        rows.append(
            {
                "name": name,
                "plugin": plugin,
                "package": info.package if info else None,
                "version": info.version if info else None,
                "status": row.get("status", "ok"),
                "detail": row.get("detail", ""),
                "schemes": list(row.get("schemes", schemes_by_plugin.get(plugin, []))),
                "ops": ops_by_plugin.get(plugin, []),
            }
        )
    for info in infos.values():
        if info.name in reported:
            continue
        status = {"loaded": "ok", "failed": "error", "disabled": "disabled"}[info.status]
        rows.append(
            {
                "name": info.package or info.name,
                "plugin": info.name,
                "package": info.package,
                "version": info.version,
                "status": status,
                "detail": info.detail,
                "schemes": schemes_by_plugin.get(info.name, []),
                "ops": ops_by_plugin.get(info.name, []),
            }
        )
    return rows


def report() -> dict[str, Any]:
    cpu_threads, io_threads, started = _native.pool_info()
    return {
        "dataio": _native.__version__,
        "abi": _native.ABI_VERSION,
        "op_abi": list(_native.OP_ABI_VERSIONS),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": f"{platform.system()}-{platform.machine()}",
        "cpu": {"logical": os.cpu_count(), "usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(), "features": _native.cpu_features()},
        "jpeg_simd": _native.jpeg_simd(),
        "pools": {
            "cpu_threads": cpu_threads,
            "io_threads": io_threads,
            "started": started,
            "env": {k: os.environ[k] for k in ("DATAIO_CPU_THREADS", "DATAIO_IO_THREADS") if k in os.environ},
        },
        "plugins": _plugin_rows(),
        "libraries": _native.probe_libraries(nvidia_library_dirs()),
    }


def format_report(r: dict[str, Any]) -> str:
    lines = [
        f"dataio {r['dataio']}  (backend ABI v{r['abi']}, op ABI {', '.join(f'v{v}' for v in r['op_abi'])})",
        f"python    {r['python']} on {r['platform']}",
        f"cpu       {r['cpu']['usable']} usable of {r['cpu']['logical']} logical; "
        f"features: {' '.join(r['cpu']['features']) or 'none detected'}",
        f"jpeg      libjpeg-turbo SIMD {r['jpeg_simd']}"
        + ("  (built without nasm: JPEG decodes at about 0.6x speed; see docs/arch.md)" if r["jpeg_simd"] == "off" else ""),
        f"pools     cpu={r['pools']['cpu_threads']} io={r['pools']['io_threads']} "
        f"({'started' if r['pools']['started'] else 'not started'}; set DATAIO_CPU_THREADS / DATAIO_IO_THREADS)",
        "",
        "packages and plugins:",
    ]
    for p in r["plugins"]:
        schemes = ", ".join(f"{s}://" for s in p["schemes"]) or "-"
        detail = f"  {p['detail']}" if p["detail"] else ""
        ops = f"  ops: {', '.join(p['ops'])}" if p.get("ops") else ""
        lines.append(f"  {p['name']:<14} {p['version'] or '?':<8} {p['status']:<20} {schemes}{ops}{detail}")
    if any(p.get("ops") for p in r["plugins"]):
        lines.append("  (`python -m dataio ops [OP ...]` lists each op's parameters with their defaults and help)")
    lines += ["", "native libraries (dlopen, optional):"]
    for lib in r["libraries"]:
        if lib["found"]:
            ver = f" {lib['version']}" if lib["version"] else ""
            lines.append(f"  {lib['name']:<14} found{ver}: {lib['path']}")
        else:
            lines.append(f"  {lib['name']:<14} not found: {lib['reason']}")
    return "\n".join(lines)
