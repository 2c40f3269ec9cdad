"""Start, address and stop the rlockd server from Python tests.

    with rlockd.Server() as srv:
        redis.Redis.from_url(srv.url).ping()
        srv.advance_clock(30_000)       # test control: the server's time, locks, faults
        srv.assert_locks_safe()

    with rlockd.Cluster(3) as c: ...          # c.startup_nodes (redis-py ClusterNodes), c.move_slot(slot, 1)
    with rlockd.Replicated(1, sentinels=3) as r: ...  # r.sentinels, r.failover()
"""

from ._binary import binary_path
from ._control import (ClockInfo, FaultInfo, Holder, Lock, LockEvent, LocksUnsafe, TestControl,
                       Waiter)
from ._server import Node, RlockdError, ResponseError, Server
from ._topology import Cluster, Replicated, ReplicationLink

__all__ = ["Server", "Cluster", "Replicated", "Node", "ReplicationLink", "RlockdError", "ResponseError", "binary_path", "TestControl", "Lock",
           "Holder", "Waiter", "LockEvent", "FaultInfo", "ClockInfo", "LocksUnsafe"]
__version__ = "0.1.0"
