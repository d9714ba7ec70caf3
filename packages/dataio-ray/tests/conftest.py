"""Fixtures of the dataio-ray tests: a real multi-node Ray cluster on this
machine, inside a network namespace that has only loopback.

Outside such a namespace Ray binds the machine's interface address (even
when told 127.0.0.1). So the first test that needs the cluster moves the test
process's main thread into a new network namespace (``unshare(CLONE_NEWNET)``,
then loopback up — what ``unshare --net`` and ``ip link set lo up`` do),
and starts the cluster from there: every Ray process it spawns (GCS, raylets,
workers) and every thread the driver starts afterwards live in that
namespace, where 127.0.0.1 is the only address there is. Nothing can leave
the host. At the end of the session the main thread returns to its old
namespace. Where the namespace cannot be made (not root, no
CAP_SYS_ADMIN), the cluster runs on the host network and the pytest header
says so.

The cluster (``ray.cluster_utils.Cluster``): a head node and one more node,
one CPU each, for the whole session; tests that remove nodes add their own
first. Failure detection is tightened (health checks every 500 ms) so that a
removed node is noticed in seconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

# Health checks: a node that stops answering is declared dead after
# period × threshold (the defaults take about 15 s or more).
SYSTEM_CONFIG = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_timeout_ms": 1000,
    "health_check_failure_threshold": 4,
}


@dataclass
class Namespace:
    description: str
    isolated: bool
    restore: Callable[[], None] = lambda: None


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sh", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sh", b"lo", 0)))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))


def _enter_loopback_namespace() -> Namespace:
    if os.environ.get("DATAIO_RAY_TEST_HOST_NETWORK"):
        return Namespace("the host network (DATAIO_RAY_TEST_HOST_NETWORK is set)", False)
    libc = ctypes.CDLL(None, use_errno=True)
    old = os.open("/proc/self/ns/net", os.O_RDONLY)
    if libc.unshare(CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        os.close(old)
        return Namespace(f"the host network (unshare(CLONE_NEWNET) failed: {os.strerror(err)}; run as root for isolation)", False)
    _loopback_up()

    def restore() -> None:
        libc.setns(old, CLONE_NEWNET)
        os.close(old)

    return Namespace("a network namespace with only loopback (127.0.0.1)", True, restore)


@dataclass
class RayCluster:
    """The session's cluster and what the tests need to know about it."""

    cluster: Any
    namespace: Namespace
    start_seconds: float
    extra_nodes: list[Any] = field(default_factory=list)

    def add_node(self, **args: Any) -> Any:
        node = self.cluster.add_node(**args)
        self.cluster.wait_for_nodes()
        self.extra_nodes.append(node)
        return node

    def remove_node(self, node: Any, graceful: bool = False) -> None:
        self.cluster.remove_node(node, allow_graceful=graceful)
        if node in self.extra_nodes:
            self.extra_nodes.remove(node)

    def lose_node(self, node: Any, worker_pids: list[int]) -> None:
        """A machine gone: its Ray processes are killed, and so are the
        workers that ran there (on one machine they would otherwise live on
        as orphans a while and keep answering calls)."""
        for pid in worker_pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.remove_node(node, graceful=False)


_NAMESPACE: Namespace | None = None


def pytest_report_header(config: pytest.Config) -> str:
    where = _NAMESPACE.description if _NAMESPACE else "a network namespace with only loopback, made when the first test needs the cluster"
    return f"dataio-ray: Ray cluster (2 nodes x 1 CPU) in {where}"


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    global _NAMESPACE
    _NAMESPACE = ns = _enter_loopback_namespace()
    # Ray's processes inherit this environment: the workers can import the
    # test modules' functions (record maps pickled by reference), and the
    # worker-only failure helpers can tell a worker from the trainer.
    os.environ["PYTHONPATH"] = os.pathsep.join([str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ["DATAIO_RAY_TEST_TRAINER_PID"] = str(os.getpid())
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # no telemetry attempts from the tests
    import ray
    from ray.cluster_utils import Cluster

    t0 = time.monotonic()
    head = {"num_cpus": 1, "include_dashboard": False, "_system_config": SYSTEM_CONFIG}
    if ns.isolated:
        head["node_ip_address"] = "127.0.0.1"
    cluster = Cluster(initialize_head=True, head_node_args=head)
    cluster.add_node(num_cpus=1, **({"node_ip_address": "127.0.0.1"} if ns.isolated else {}))
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    cluster.wait_for_nodes()
    started = time.monotonic() - t0
    sys.stderr.write(f"\ndataio-ray: cluster up in {started:.1f} s in {ns.description}\n")
    try:
        yield RayCluster(cluster, ns, started)
    finally:
        ray.shutdown()
        cluster.shutdown()
        ns.restore()
