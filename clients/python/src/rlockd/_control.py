"""Typed methods for rlockd's test control (``RLOCKD ...`` commands).

They are mixed into :class:`rlockd.Server` and go through its
``execute_command`` (RESP2: the server's maps arrive as flat arrays, bulk
strings as ``bytes``).
"""

import contextlib
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Literal, Optional, Tuple, Union

from ._options import checked

FaultKind = Literal["error", "latency", "close", "freeze", "slowwrite", "cutwrite", "dropmsg",
                    "delaymsg"]

# How many positional parameters each fault kind takes (min, max).
_FAULT_ARITY = {
    "error": (1, 1),       # message
    "latency": (1, 1),     # ms (JITTER through jitter=)
    "close": (0, 1),       # "before" | "after"
    "freeze": (1, 1),      # ms
    "slowwrite": (2, 2),   # bytes, ms
    "cutwrite": (1, 1),    # bytes
    "dropmsg": (0, 0),
    "delaymsg": (1, 1),    # ms
}
# The keyword arguments of a kind that the server takes after a word (RLOCKD FAULT LATENCY <ms>
# JITTER <ms>), and the scope every kind may take (which of them a kind takes: RLOCKD SCHEMA
# FAULT; the server refuses a wrong one). tests/test_schema.py checks these tables against the
# server's own description.
_FAULT_TOKENS = {"latency": {"jitter": "JITTER"}}
_FAULT_SCOPE = {"command": "COMMAND", "key": "KEY", "client": "CLIENT", "id": "ID",
                "channel": "CHANNEL", "times": "TIMES"}


class LocksUnsafe(AssertionError):
    """Raised by :meth:`Server.assert_locks_safe`; ``violations`` lists what the server saw."""

    def __init__(self, violations):
        self.violations = list(violations)
        lines = "\n".join(f"  - {v}" for v in self.violations)
        super().__init__(f"rlockd saw {len(self.violations)} lock safety violation(s):\n{lines}")


@dataclass(frozen=True)
class Holder:
    """One holder of a lock: a Redisson ``uuid:threadId``, a token, a semaphore member."""

    id: str
    count: int
    """Re-entries (1 for non-reentrant locks)."""
    lease_ms: Optional[int]
    """This hold's remaining lease in ms, when known."""
    score: Optional[float]
    """A sorted-set holder's score (acquisition time or deadline, unix ms)."""


@dataclass(frozen=True)
class Waiter:
    """One waiter of a fair lock, in queue order."""

    id: str
    deadline_ms: Optional[int]


@dataclass(frozen=True)
class Lock:
    """A lock as the server reads it out of the keyspace (``RLOCKD LOCKS``)."""

    key: str
    db: int
    kind: str
    """``reentrant``, ``fair``, ``read-write``, ``token``, ``counter`` or ``zset-semaphore``."""
    mode: Optional[str]
    """``read`` or ``write`` for a read-write lock."""
    lease_ms: Optional[int]
    """Remaining TTL of the lock's key (None: no TTL)."""
    value: Optional[int]
    """A counter's value (free permits, a latch's count)."""
    holders: Tuple[Holder, ...]
    waiters: Tuple[Waiter, ...]


@dataclass(frozen=True)
class LockEvent:
    """Something that happened to a lock (``RLOCKD EVENTS``)."""

    id: int
    time_ms: int
    db: int
    key: str
    kind: str
    event: str
    """``acquired``, ``reentered``, ``renewed``, ``released``, ``expired`` or ``counter``."""
    holder: str
    count: int
    client: int
    """Client id behind it (0 for an expiry)."""
    command: str


@dataclass(frozen=True)
class FaultInfo:
    """A fault that is set (``RLOCKD FAULT LIST``)."""

    id: int
    kind: str
    params: str
    command: Optional[str]
    key: Optional[str]
    client: Optional[str]
    client_id: Optional[int]
    channel: Optional[str]
    times_left: Optional[int]
    """Matches left before it removes itself (None: until cleared)."""
    hits: int


@dataclass(frozen=True)
class ClockInfo:
    now_ms: int
    offset_ms: int
    """How far the server's clock is from the system clock."""
    frozen: bool


def _text(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def _map(flat: Any) -> Dict[str, Any]:
    """A RESP2 flat array ``[k1, v1, k2, v2, ...]`` as a dict with str keys."""
    if not isinstance(flat, list) or len(flat) % 2:
        raise ValueError(f"expected a map as a flat array, got {flat!r}")
    return {_text(flat[i]): flat[i + 1] for i in range(0, len(flat), 2)}


def _opt_int(v: Any) -> Optional[int]:
    return None if v is None else int(v)


def _opt_text(v: Any) -> Optional[str]:
    return None if v is None else _text(v)


def _lock(flat: Any) -> Lock:
    m = _map(flat)
    holders = []
    for h in m["holders"]:
        h = _map(h)
        score = h.get("score")
        holders.append(Holder(id=_text(h["id"]), count=int(h["count"]),
                              lease_ms=_opt_int(h.get("lease_ms")),
                              score=None if score is None else float(score)))
    waiters = []
    for w in m["waiters"]:
        w = _map(w)
        waiters.append(Waiter(id=_text(w["id"]), deadline_ms=_opt_int(w.get("deadline_ms"))))
    return Lock(key=_text(m["key"]), db=int(m["db"]), kind=_text(m["kind"]),
                mode=_opt_text(m.get("mode")), lease_ms=_opt_int(m.get("lease_ms")),
                value=_opt_int(m.get("value")), holders=tuple(holders), waiters=tuple(waiters))


def _event(flat: Any) -> LockEvent:
    m = _map(flat)
    return LockEvent(id=int(m["id"]), time_ms=int(m["time_ms"]), db=int(m["db"]),
                     key=_text(m["key"]), kind=_text(m["kind"]), event=_text(m["event"]),
                     holder=_text(m["holder"]), count=int(m["count"]), client=int(m["client"]),
                     command=_text(m["command"]))


def _fault(flat: Any) -> FaultInfo:
    m = _map(flat)
    return FaultInfo(id=int(m["id"]), kind=_text(m["kind"]), params=_text(m["params"]),
                     command=_opt_text(m.get("command")), key=_opt_text(m.get("key")),
                     client=_opt_text(m.get("client")), client_id=_opt_int(m.get("client_id")),
                     channel=_opt_text(m.get("channel")), times_left=_opt_int(m.get("times_left")),
                     hits=int(m["hits"]))


class TestControl:
    """The ``RLOCKD`` test-control commands as methods (mixed into :class:`rlockd.Server`).

    An error reply raises :class:`rlockd.ResponseError`.
    """

    __test__ = False  # not a pytest test class

    def _rlockd(self, *args):
        return self.execute_command("RLOCKD", *args)

    # -- clock -------------------------------------------------------------

    def clock_ms(self) -> int:
        """The server's time in unix milliseconds."""
        return int(self._rlockd("CLOCK", "GET"))

    def clock_info(self) -> ClockInfo:
        m = _map(self._rlockd("CLOCK", "INFO"))
        return ClockInfo(now_ms=int(m["now_ms"]), offset_ms=int(m["offset_ms"]),
                         frozen=bool(m["frozen"]))

    def advance_clock(self, ms: int) -> int:
        """Moves the server's time by ``ms`` (negative: back). Keys now due expire
        before this returns, with their ``expired`` events. Returns the new time."""
        return int(self._rlockd("CLOCK", "ADVANCE", int(ms)))

    def set_clock(self, unix_ms: int) -> int:
        """Jumps to ``unix_ms`` (back or forth). Returns the new time."""
        return int(self._rlockd("CLOCK", "SET", int(unix_ms)))

    def freeze_clock(self) -> None:
        """Stops the server's time (TTLs, TIME, blocking timeouts, scripts)."""
        self._rlockd("CLOCK", "FREEZE")

    def resume_clock(self) -> None:
        """Lets the server's time run again as if it had never stopped (moves made while frozen stay; the time spent frozen is caught up)."""
        self._rlockd("CLOCK", "RESUME")

    def skew_clock(self, ms: int) -> int:
        """Runs ``ms`` ahead of (negative: behind) the system clock. Returns the new time."""
        return int(self._rlockd("CLOCK", "SKEW", int(ms)))

    # -- locks -------------------------------------------------------------

    def locks(self, pattern: Optional[str] = None) -> List[Lock]:
        """Every lock in the keyspace (keys matching the glob ``pattern``)."""
        args = ["LOCKS"] if pattern is None else ["LOCKS", pattern]
        return [_lock(x) for x in self._rlockd(*args)]

    def locks_text(self, pattern: Optional[str] = None) -> str:
        """The same, readable: one line per lock, holder and waiter."""
        args = ["LOCKS", "TEXT"] if pattern is None else ["LOCKS", pattern, "TEXT"]
        return _text(self._rlockd(*args))

    def lock_events(self, key: Optional[str] = None, since: int = 0) -> List[LockEvent]:
        """What happened to the locks (of ``key``), after event id ``since``."""
        args = ["EVENTS"]
        if key is not None:
            args.append(key)
        if since:
            args += ["SINCE", int(since)]
        return [_event(x) for x in self._rlockd(*args)]

    def check_locks(self) -> List[str]:
        """Every safety violation the server saw (empty: nothing was unsafe)."""
        return [_text(v) for v in self._rlockd("CHECK")]

    def reset_lock_checks(self) -> None:
        """Forgets the events and violations seen so far."""
        self._rlockd("CHECK", "RESET")

    def assert_locks_safe(self) -> None:
        """Raises :class:`LocksUnsafe` (an ``AssertionError``) listing the violations, if any."""
        violations = self.check_locks()
        if violations:
            raise LocksUnsafe(violations)

    # -- timeline and claims -----------------------------------------------

    def timeline(self, path: Union[str, "os.PathLike[str]", None] = None, *,
                 key: Optional[str] = None, from_ms: Optional[int] = None,
                 to_ms: Optional[int] = None, format: Literal["html", "json"] = "html") -> str:
        """``RLOCKD TIMELINE``: the lock history as one self-contained HTML document (or JSON
        with ``format="json"``); written to ``path`` too when one is given. ``key`` is a glob
        pattern; ``from_ms`` / ``to_ms`` bound the time shown (server time, unix ms)."""
        args: List[Any] = ["TIMELINE"]
        if key is not None:
            args += ["KEY", key]
        if from_ms is not None:
            args += ["FROM", int(from_ms)]
        if to_ms is not None:
            args += ["TO", int(to_ms)]
        args += ["FORMAT", format]
        doc = _text(self._rlockd(*args))
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(doc)
        return doc

    def history(self, path: Union[str, "os.PathLike[str]", None] = None, *,
                key: Optional[str] = None, format: Literal["json", "jepsen"] = "json") -> str:
        """``RLOCKD HISTORY``: the lock history as Jepsen-style operations (``index``, ``time``,
        ``type``, ``process``, ``f``, ``value``), a JSON array (or Jepsen's EDN with
        ``format="jepsen"``); written to ``path`` too when one is given. ``key`` is a glob
        pattern. The Go module's ``check`` command checks it with Porcupine."""
        args: List[Any] = ["HISTORY"]
        if key is not None:
            args += ["KEY", key]
        args += ["FORMAT", format]
        doc = _text(self._rlockd(*args))
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(doc)
        return doc

    def claim_enter(self, lock: str, holder: Union[str, bytes]) -> None:
        """``RLOCKD CLAIM ENTER``: the application's code is now inside the critical section
        guarded by ``lock``, as ``holder`` (the holder the lock's script writes: redis-py
        ``Lock``'s ``lock.local.token``, Redisson's ``uuid:threadId``)."""
        self._rlockd("CLAIM", "ENTER", lock, holder)

    def claim_leave(self, lock: str, holder: Union[str, bytes]) -> None:
        """``RLOCKD CLAIM LEAVE``: it left that section."""
        self._rlockd("CLAIM", "LEAVE", lock, holder)

    @contextlib.contextmanager
    def claim(self, lock: Any, holder: Union[str, bytes, None] = None) -> Iterator[None]:
        """The body of the ``with`` block is a claimed critical section: ``check_locks()``
        then flags it if it overlapped another holder's grant or outlived its own lease.
        ``lock`` is a lock name with its ``holder``, or a redis-py ``Lock`` (its name and
        token)::

            with lock, srv.claim(lock):
                ...  # the critical section
        """
        if holder is None:
            holder = lock.local.token
            lock = lock.name
        self.claim_enter(lock, holder)
        try:
            yield
        finally:
            self.claim_leave(lock, holder)

    # -- snapshots ---------------------------------------------------------

    def snapshot(self, name: str) -> None:
        """Captures every database, TTLs included, under ``name``."""
        self._rlockd("SNAPSHOT", name)

    def restore(self, name: str) -> None:
        """Replaces every database with snapshot ``name`` (as after a failover)."""
        self._rlockd("RESTORE", name)

    def snapshots(self) -> List[str]:
        return [_text(n) for n in self._rlockd("SNAPSHOTS")]

    # -- faults ------------------------------------------------------------

    @checked
    def add_fault(self, kind: FaultKind, *params: Union[str, int], jitter: Optional[int] = None,
                  command: Optional[str] = None, key: Optional[str] = None,
                  client: Optional[str] = None, id: Optional[int] = None,
                  channel: Optional[str] = None, times: Optional[int] = None) -> int:
        """Sets a fault and returns its id.

        ``kind`` and its ``params``: ``"error", message``; ``"latency", ms`` (and
        ``jitter=ms``); ``"close"[, "before" | "after"]``; ``"freeze", ms``;
        ``"slowwrite", bytes, ms``; ``"cutwrite", bytes``; ``"dropmsg"``;
        ``"delaymsg", ms``. Scope (every one given must hold): ``command``, ``key``,
        ``client`` (name patterns), ``id`` (client id), ``channel`` (message
        faults only); ``times``: remove it after that many matches.

            srv.add_fault("latency", 200, client="worker-*", times=3)
            srv.add_fault("error", "READONLY You can't write against a read only replica.",
                          command="set")
        """
        k = str(kind).lower()
        if k not in _FAULT_ARITY:
            raise ValueError(f"unknown fault kind {kind!r}; one of {', '.join(_FAULT_ARITY)}")
        lo, hi = _FAULT_ARITY[k]
        if not lo <= len(params) <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            raise TypeError(f"fault {k!r} takes {want} parameter(s), got {len(params)}")
        args: List[Any] = ["FAULT", k.upper(), *params]
        if jitter is not None:
            if "jitter" not in _FAULT_TOKENS.get(k, {}):
                raise TypeError("jitter= goes with 'latency' only")
            args += [_FAULT_TOKENS[k]["jitter"], int(jitter)]
        scope = {"command": command, "key": key, "client": client, "id": id, "channel": channel,
                 "times": times}
        for name, word in _FAULT_SCOPE.items():
            if scope[name] is not None:
                args += [word, scope[name]]
        return int(self._rlockd(*args))

    def faults(self) -> List[FaultInfo]:
        """The faults set, with how often each applied."""
        return [_fault(x) for x in self._rlockd("FAULT", "LIST")]

    def clear_faults(self, id: Optional[int] = None) -> int:
        """Removes fault ``id``, or all of them; returns how many went."""
        args = ["FAULT", "CLEAR"] if id is None else ["FAULT", "CLEAR", int(id)]
        return int(self._rlockd(*args))

    @checked
    def kill_clients(self, client: Optional[str] = None, id: Optional[int] = None) -> int:
        """Closes the connections whose name matches ``client`` and/or whose id is ``id``
        (neither: every other connection) now; returns how many."""
        args: List[Any] = ["FAULT", "KILL"]
        if client is not None:
            args += ["CLIENT", client]
        if id is not None:
            args += ["ID", int(id)]
        return int(self._rlockd(*args))
