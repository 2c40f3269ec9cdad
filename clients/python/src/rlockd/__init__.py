"""Start, address and stop the rlockd server from Python tests.

    with rlockd.Server() as srv:
        redis.Redis.from_url(srv.url).ping()
        srv.advance_clock(30_000)       # test control: the server's time, locks, faults
        srv.assert_locks_safe()
"""

from ._binary import binary_path
from ._control import (ClockInfo, FaultInfo, Holder, Lock, LockEvent, LocksUnsafe, TestControl,
                       Waiter)
from ._server import RlockdError, ResponseError, Server

__all__ = ["Server", "RlockdError", "ResponseError", "binary_path", "TestControl", "Lock",
           "Holder", "Waiter", "LockEvent", "FaultInfo", "ClockInfo", "LocksUnsafe"]
__version__ = "0.1.0"
