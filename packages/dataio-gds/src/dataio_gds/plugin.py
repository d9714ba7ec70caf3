"""Entry-point module of dataio-gds: its report row."""

from __future__ import annotations

from dataio.hookspecs import hookimpl


@hookimpl
def dataio_register_capabilities(register) -> None:
    def row() -> dict:
        from .cufile import probe

        p = probe()
        if p["available"]:
            return {"status": "ok", "detail": f"cuFile {p.get('version') or '?'} at {p['path']}; nvidia-fs {'present' if p['nvidia_fs'] else 'absent (compat mode)'}"}
        return {"status": "unavailable", "detail": p["reason"]}

    register("dataio-gds", row)
