"""Fixtures of the dataio-rdma tests: real libfabric, servers in their own
processes, and (where the sandbox allows) in their own network namespace.

The topology: the tests try to make a network namespace joined to the test
process's namespace by a veth pair, and run every server process inside it,
so client and server talk across two network stacks over a real link. Where
that is not possible (no root, no ``ip``, no netns support) the servers run
in separate processes on loopback instead; the header of the pytest run says
which topology was used and why.

libfabric is a declared dependency (a system package noxfile.py installs;
its tcp and sockets providers need no RDMA NIC), so a host where it cannot
be loaded fails the tests that need it, saying what to install; nothing here
needs RDMA hardware.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dataio_rdma import _native

SERVER_SCRIPT = Path(__file__).with_name("_server.py")


def _libfabric() -> dict[str, Any]:
    return json.loads(_native.info_json())["libfabric"]


@pytest.fixture(scope="session")
def libfabric() -> dict[str, Any]:
    lib = _libfabric()
    if not lib["loaded"]:
        pytest.fail(f"libfabric cannot be loaded on this host ({lib['reason']}); install libfabric1 (apt-get install libfabric1)")
    return lib


@dataclass
class Topology:
    description: str
    prefix: list[str] = field(default_factory=list)  # runs a command where servers live
    server_host: str = "127.0.0.1"
    teardown: list[list[str]] = field(default_factory=list)

    @property
    def bind(self) -> str:
        return f"{self.server_host}:0"


def _run(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=20)


def _make_netns() -> Topology:
    if os.geteuid() != 0:
        raise RuntimeError("not root")
    if shutil.which("ip") is None:
        raise RuntimeError("the ip command (iproute2) is missing")
    tag = f"{os.getpid() % 100000}"
    ns, host_if, ns_if = f"dio-rdma-{tag}", f"dioh{tag}", f"dion{tag}"
    subnet = f"10.213.{os.getpid() % 250}"
    teardown = [["ip", "link", "del", host_if], ["ip", "netns", "del", ns]]
    steps = [
        ["ip", "netns", "add", ns],
        ["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if],
        ["ip", "link", "set", ns_if, "netns", ns],
        ["ip", "addr", "add", f"{subnet}.1/24", "dev", host_if],
        ["ip", "link", "set", host_if, "up"],
        ["ip", "netns", "exec", ns, "ip", "addr", "add", f"{subnet}.2/24", "dev", ns_if],
        ["ip", "netns", "exec", ns, "ip", "link", "set", ns_if, "up"],
        ["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"],
    ]
    try:
        for step in steps:
            _run(step)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        for cmd in teardown:
            subprocess.run(cmd, capture_output=True, check=False)
        stderr = getattr(e, "stderr", b"") or b""
        raise RuntimeError(f"{' '.join(getattr(e, 'cmd', []) or [])}: {stderr.decode(errors='replace').strip() or e}") from e
    return Topology(
        description=f"servers in network namespace {ns} ({subnet}.2), clients in the test's namespace ({subnet}.1), over a veth pair",
        prefix=["ip", "netns", "exec", ns],
        server_host=f"{subnet}.2",
        teardown=teardown,
    )


_TOPOLOGY: Topology | None = None


def _topology() -> Topology:
    global _TOPOLOGY
    if _TOPOLOGY is None:
        if os.environ.get("DATAIO_RDMA_TEST_LOOPBACK"):
            _TOPOLOGY = Topology("servers in separate processes on loopback (DATAIO_RDMA_TEST_LOOPBACK is set)")
        else:
            try:
                _TOPOLOGY = _make_netns()
            except RuntimeError as e:
                _TOPOLOGY = Topology(f"servers in separate processes on loopback (network namespaces unavailable: {e})")
    return _TOPOLOGY


def pytest_report_header(config: pytest.Config) -> str:
    lib = _libfabric()
    if not lib["loaded"]:
        return f"dataio-rdma: libfabric not loaded ({lib['reason']})"
    return f"dataio-rdma: libfabric {lib['version']} from {lib['path']}; topology: {_topology().description}"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _TOPOLOGY is not None:
        for cmd in _TOPOLOGY.teardown:
            subprocess.run(cmd, capture_output=True, check=False)


@pytest.fixture(scope="session")
def topology(libfabric: dict[str, Any]) -> Topology:
    return _topology()


class ServerProcess:
    """A server in its own process (see _server.py)."""

    def __init__(self, topology: Topology, args: dict[str, Any], env: dict[str, str] | None = None) -> None:
        args = {"bind": topology.bind, **args}
        self.proc = subprocess.Popen(
            [*topology.prefix, sys.executable, str(SERVER_SCRIPT), json.dumps(args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        hello = self._line(timeout=60)
        self.addr: str = hello["addr"]
        self.provider: str = hello["provider"]
        self.size: int = hello["size"]

    def _line(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.kill()
            raise AssertionError(f"the server process said nothing for {timeout}s")
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
            raise AssertionError(f"the server process exited ({self.proc.wait()}): {err}")
        result: dict[str, Any] = json.loads(line)
        return result

    def cmd(self, **command: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(command) + "\n").encode())
        self.proc.stdin.flush()
        return self._line(timeout=60)

    def sha256(self, offset: int, size: int) -> str:
        return str(self.cmd(cmd="sha256", offset=offset, size=size)["sha256"])

    def close(self) -> dict[str, Any]:
        result = self.cmd(cmd="close")
        self.proc.wait(timeout=30)
        return result

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.fixture
def spawn_server(topology: Topology) -> Iterator[Any]:
    started: list[ServerProcess] = []

    def spawn(env: dict[str, str] | None = None, **args: Any) -> ServerProcess:
        s = ServerProcess(topology, args, env)
        started.append(s)
        return s

    yield spawn
    for s in started:
        s.kill()
        for stream in (s.proc.stdin, s.proc.stdout, s.proc.stderr):
            if stream is not None:
                stream.close()


def wait_until(predicate: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
