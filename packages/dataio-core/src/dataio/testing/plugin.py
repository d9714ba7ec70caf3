"""The plugin suite: :class:`PluginConformance`, how a plugin presents itself
(found through its entry point, registering what it declares under its own
name, reporting itself honestly)."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any

__all__ = ["PluginConformance"]


class PluginConformance:
    """A plugin is found through its entry point, registers what it declares
    under its own name, and reports itself honestly. Set the class
    attributes; no fixture is needed.

    ``entry_point`` is the name under ``[project.entry-points.dataio]``,
    ``package`` the distribution (also its report row's name); ``schemes``,
    ``device_types``, ``namespaces`` and ``ops`` are what it registers. Override
    :meth:`expected_status` where the status depends on the host (a plugin
    for hardware reports ``"unavailable"``, with the reason, without it)."""

    entry_point: str
    package: str
    schemes: Sequence[str] = ()
    device_types: Sequence[str] = ()
    namespaces: Sequence[str] = ()
    ops: Sequence[str] = ()

    def expected_status(self) -> str:
        return "ok"

    def _row(self) -> dict[str, Any]:
        from dataio.capabilities import report

        rows = [p for p in report()["plugins"] if p["name"] == self.package]
        assert len(rows) == 1, f"{self.package} must have exactly one row in the capability report, has {len(rows)}"
        return rows[0]

    def test_registered_through_the_entry_point(self) -> None:
        from dataio.plugins import list_plugins

        info = {p.name: p for p in list_plugins()}[self.entry_point]
        assert info.status == "loaded", info.detail
        assert info.package == self.package
        assert info.version == importlib.metadata.version(self.package)

    def test_registers_what_it_declares_under_its_own_name(self) -> None:
        from dataio.plugins import list_backends, list_device_readers, list_namespaces, list_ops

        for registered, declared in (
            (list_backends(), self.schemes),
            (list_device_readers(), self.device_types),
            (list_namespaces(), self.namespaces),
            (list_ops(), self.ops),
        ):
            mine = sorted(name for name, reg in registered.items() if reg.plugin == self.entry_point)
            assert mine == sorted(declared), f"{self.entry_point} registers {mine}, declares {sorted(declared)}"

    def test_reports_its_row(self) -> None:
        row = self._row()
        assert row["status"] == self.expected_status(), row
        assert row["schemes"] == list(self.schemes)
        if row["status"] != "ok":
            assert row["detail"], "a plugin that is not ok must say why"
