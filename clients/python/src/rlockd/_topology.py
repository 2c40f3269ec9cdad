"""Topologies in one rlockd process: a Redis Cluster, a primary with replicas and Sentinels."""

import time
from dataclasses import dataclass
from typing import List, Optional, Tuple, Union

from ._control import Lock, LockEvent, _map, _text
from ._options import checked
from ._server import Node, ResponseError, RlockdError, Server


@dataclass(frozen=True)
class ReplicationLink:
    """One replication link (``RLOCKD REPL STATUS`` on a primary)."""

    primary: str
    """``host:port``."""
    replica: str
    acked: int
    """The replica's acknowledged offset."""
    pending_writes: int
    pending_bytes: int
    paused: bool
    lag_ms: int
    broken: bool


def _link(flat) -> ReplicationLink:
    m = _map(flat)
    return ReplicationLink(
        primary=_text(m["primary"]), replica=_text(m["replica"]), acked=int(m["acked"]),
        pending_writes=int(m["pending_writes"]), pending_bytes=int(m["pending_bytes"]),
        paused=bool(m["paused"]), lag_ms=int(m["lag_ms"]), broken=bool(m["broken"]))


class _Topology(Server):
    """What a cluster and a replicated set share: their nodes, and the checks and the clock
    over all of them. Every other test-control method (``locks``, ``add_fault``,
    ``snapshot``...) of the object itself acts on the first node; each node has them all
    (``nodes[i].add_fault(...)``)."""

    @property
    def nodes(self) -> List[Node]:
        """Every node, in start order (for a replicated set: the primary, then its replicas)."""
        if self._port is None:
            raise RlockdError("the server is not started")
        return [Node(self.host, p, self.password) for p in self._ports]

    @property
    def urls(self) -> List[str]:
        return [n.url for n in self.nodes]

    def _up(self):
        """The nodes that accept connections (a cluster node taken down does not)."""
        out = []
        for n in self.nodes:
            try:
                n.ping()
            except OSError:
                continue
            out.append(n)
        return out

    # The clock: every node's moves together.
    def advance_clock(self, ms: int) -> int:
        return [n.advance_clock(ms) for n in self._up()][0]

    def set_clock(self, unix_ms: int) -> int:
        return [n.set_clock(unix_ms) for n in self._up()][0]

    def freeze_clock(self) -> None:
        for n in self._up():
            n.freeze_clock()

    def resume_clock(self) -> None:
        for n in self._up():
            n.resume_clock()

    def skew_clock(self, ms: int) -> int:
        return [n.skew_clock(ms) for n in self._up()][0]

    # The checks: what any node saw.
    def check_locks(self) -> List[str]:
        seen = {}
        for n in self._up():
            for v in n.check_locks():
                seen.setdefault(v, None)
        return list(seen)

    def reset_lock_checks(self) -> None:
        for n in self._up():
            n.reset_lock_checks()

    def clear_faults(self, id: Optional[int] = None) -> int:
        if id is not None:
            return super().clear_faults(id)
        return sum(n.clear_faults() for n in self._up())


class Cluster(_Topology):
    """A Redis Cluster of ``nodes`` primaries in one rlockd process (``rlockd --cluster N``),
    each node on its own free port, the slots split as ``redis-cli --cluster create`` splits
    them. ``replicas`` passes ``--cluster-replicas`` (where the binary supports it).

        with rlockd.Cluster(3) as c:
            rc = redis.cluster.RedisCluster(startup_nodes=c.startup_nodes)

    ``move_slot``, ``take_down`` and ``bring_up`` are ``RLOCKD CLUSTER MOVESLOT | DOWN | UP``,
    ``failover`` ``RLOCKD CLUSTER FAILOVER``; the replication controls act on the links of
    every primary (or of one: ``primary=``, or one replica's: ``replica=``); the clock,
    ``locks()``, ``check_locks()`` and ``assert_locks_safe()`` cover every node.
    """

    @checked
    def __init__(self, nodes: int = 3, *, replicas: int = 0, args=(), port=0, host="127.0.0.1",
                 password=None, binary=None, startup_timeout=10.0):
        if nodes < 1:
            raise ValueError("a cluster has at least one node")
        extra = ["--cluster", str(nodes)]
        if replicas:
            extra += ["--cluster-replicas", str(replicas)]
        super().__init__(port, host=host, password=password, args=extra + [str(a) for a in args],
                         binary=binary, startup_timeout=startup_timeout)
        self._want_nodes = nodes * (1 + replicas)

    def __repr__(self):
        state = f"ports {self._ports}" if self.running else "stopped"
        return f"<rlockd.Cluster {state}>"

    @property
    def startup_nodes(self) -> list:
        """Every node as redis-py's ``RedisCluster(startup_nodes=...)`` takes its seeds
        (``redis.cluster.ClusterNode``; needs redis-py). :attr:`addresses` has them as
        ``(host, port)``."""
        try:
            from redis.cluster import ClusterNode
        except ImportError as e:
            raise RlockdError(
                "startup_nodes are redis-py's ClusterNode (pip install redis); "
                "addresses gives (host, port) pairs") from e
        return [ClusterNode(h, p) for h, p in self.addresses]

    @property
    def addresses(self) -> List[Tuple[str, int]]:
        """``(host, port)`` of every node."""
        return [(n.host, n.port) for n in self.nodes]

    def _node_arg(self, node: Union[int, Node]) -> str:
        if isinstance(node, Node):
            return str(self._ports.index(node.port))
        return str(int(node))

    def key_slot(self, key: Union[str, bytes]) -> int:
        """The key's hash slot (``CLUSTER KEYSLOT``)."""
        return int(self.execute_command("CLUSTER", "KEYSLOT", key))

    def slot_owner(self, slot: int) -> Optional[int]:
        """The index (in :attr:`nodes`) of the node serving ``slot`` now, None if none does."""
        for r in self.execute_command("CLUSTER", "SLOTS"):
            if int(r[0]) <= slot <= int(r[1]):
                return self._ports.index(int(r[2][1]))
        return None

    def move_slot(self, slot: int, node: Union[int, Node], keys: Optional[int] = None) -> int:
        """Moves ``slot`` with its keys to ``node`` (its index, or the :class:`Node`): clients
        get ``MOVED``. With ``keys``, moves only that many more keys and leaves the slot
        MIGRATING/IMPORTING (clients get ``ASK``). Returns how many keys moved."""
        args = ["CLUSTER", "MOVESLOT", int(slot), self._node_arg(node)]
        if keys is not None:
            args += ["KEYS", int(keys)]
        return int(self._via_up_node(*args))

    def take_down(self, node: Union[int, Node]) -> None:
        """Stops a node: its clients are cut, its port refuses, the others answer
        ``CLUSTERDOWN`` for its slots."""
        self._via_up_node("CLUSTER", "DOWN", self._node_arg(node))

    def bring_up(self, node: Union[int, Node]) -> None:
        """Starts a node taken down again, on its port, with its keys."""
        self._via_up_node("CLUSTER", "UP", self._node_arg(node))

    def failover(self, replica: Union[int, Node]) -> Node:
        """Promotes ``replica`` (its index or :class:`Node`; a primary's index names its first
        replica) at once with what it has received (``RLOCKD CLUSTER FAILOVER``): it takes the
        slots, its primary becomes its replica. Returns the new primary."""
        self._via_up_node("CLUSTER", "FAILOVER", self._node_arg(replica))
        node = replica if isinstance(replica, Node) else self.nodes[int(replica)]
        if _text(node.execute_command("ROLE")[0]) == "master":
            return node
        for n in self._primaries():  # a primary was named: the one it now replicates
            if any(int(r[1]) == node.port for r in n.execute_command("ROLE")[2]):
                return n
        raise RlockdError(f"no node took over from node {replica}")

    def _primaries(self):
        return [n for n in self._up() if _text(n.execute_command("ROLE")[0]) == "master"]

    def _repl(self, *args, replica=None, primary=None):
        """``RLOCKD REPL ...`` on one replica's primary (that link), on one primary (its
        links), or on every primary; returns the sum of the answers."""
        if replica is not None:
            rep = replica if isinstance(replica, Node) else self.nodes[int(replica)]
            role = rep.execute_command("ROLE")
            if _text(role[0]) != "slave":
                raise RlockdError(f"node {replica} is not a replica")
            prim = Node(_text(role[1]), int(role[2]), self.password)
            return [prim._rlockd("REPL", *args, rep.port)]
        if primary is not None:
            prim = primary if isinstance(primary, Node) else self.nodes[int(primary)]
            return [prim._rlockd("REPL", *args)]
        return [p._rlockd("REPL", *args) for p in self._primaries()]

    def pause_replication(self, replica: Union[None, int, Node] = None, *,
                          primary: Union[None, int, Node] = None) -> int:
        """Holds the stream to the replicas (of every primary, of ``primary``, or to
        ``replica`` only): writes pile up unacknowledged. Returns how many links."""
        return sum(int(x) for x in self._repl("PAUSE", replica=replica, primary=primary))

    def resume_replication(self, replica: Union[None, int, Node] = None, *,
                           primary: Union[None, int, Node] = None) -> int:
        """Lets the held stream flow again."""
        return sum(int(x) for x in self._repl("RESUME", replica=replica, primary=primary))

    def set_replication_lag(self, ms: int, replica: Union[None, int, Node] = None, *,
                            primary: Union[None, int, Node] = None) -> int:
        """Delivers each write ``ms`` after it was made (0: at once)."""
        return sum(int(x) for x in self._repl("LAG", int(ms), replica=replica, primary=primary))

    def drop_replication(self, replica: Union[None, int, Node] = None, *,
                         primary: Union[None, int, Node] = None) -> int:
        """Loses what the replicas have not received yet; returns how many writes were lost."""
        return sum(int(x) for x in self._repl("DROP", replica=replica, primary=primary))

    def break_replication(self, replica: Union[None, int, Node] = None, *,
                          primary: Union[None, int, Node] = None) -> int:
        """Takes the links down (``master_link_status:down``)."""
        return sum(int(x) for x in self._repl("BREAK", replica=replica, primary=primary))

    def restore_replication(self, replica: Union[None, int, Node] = None, *,
                            primary: Union[None, int, Node] = None) -> int:
        """Brings the links back; the replicas catch up."""
        return sum(int(x) for x in self._repl("RESTORE", replica=replica, primary=primary))

    def replication_status(self) -> List[ReplicationLink]:
        """Every primary's links."""
        return [_link(flat) for links in self._repl("STATUS") for flat in links]

    def _via_up_node(self, *args):
        last = None
        for n in self.nodes:
            try:
                return n._rlockd(*args)
            except OSError as e:  # that node is down: any other one answers
                last = e
        raise RlockdError(f"no node of the cluster answers: {last}")

    def locks(self, pattern: Optional[str] = None) -> List[Lock]:
        """The locks of the whole cluster (any node answers for all)."""
        for n in self._up():
            return n.locks(pattern)
        return []

    def lock_events(self, key: Optional[str] = None, since: int = 0) -> List[LockEvent]:
        """The lock events of the whole cluster, in time order: any node answers for all
        (``since`` is a node's own event id: use ``nodes[i].lock_events`` with it)."""
        if since:
            raise TypeError("since= is per node: use cluster.nodes[i].lock_events(key, since)")
        for n in self._up():
            return n.lock_events(key)
        return []


class Replicated(_Topology):
    """A primary with ``replicas`` replicas and ``sentinels`` Sentinels watching it as
    ``mymaster``, in one rlockd process (``rlockd --replicas N --sentinel 0,0,0``).

        with rlockd.Replicated(replicas=1, sentinels=3) as r:
            s = redis.sentinel.Sentinel(r.sentinels)
            s.master_for(r.master_name)...
            r.pause_replication()          # writes pile up unacknowledged
            r.failover()                   # the replica is promoted with what it has

    ``primary``, ``replica_urls`` and ``sentinels`` are the addresses at start; after a
    failover :meth:`current_primary` tells where the primary is (:meth:`failover` returns once
    the Sentinels name it too). The replication controls
    (``RLOCKD REPL ...``) go to the current primary.
    """

    @checked
    def __init__(self, replicas: int = 1, *, sentinels: int = 3, args=(), port=0,
                 host="127.0.0.1", password=None, binary=None, startup_timeout=10.0):
        if replicas < 0 or sentinels < 0:
            raise ValueError("replicas and sentinels are counts")
        extra = ["--replicas", str(replicas)]
        if sentinels:
            extra += ["--sentinel", ",".join(["0"] * sentinels)]
        super().__init__(port, host=host, password=password, args=extra + [str(a) for a in args],
                         binary=binary, startup_timeout=startup_timeout)
        self._want_nodes = 1 + replicas
        self._want_sentinels = sentinels

    def __repr__(self):
        state = f"ports {self._ports}, sentinels {self._sentinel_ports}" if self.running else "stopped"
        return f"<rlockd.Replicated {state}>"

    master_name = "mymaster"
    """The name the Sentinels watch the primary under."""

    @property
    def primary(self) -> Node:
        """The primary as started (see :meth:`current_primary` after a failover)."""
        return self.nodes[0]

    @property
    def replicas(self) -> List[Node]:
        """The replicas as started."""
        return self.nodes[1:]

    @property
    def replica_urls(self) -> List[str]:
        return [n.url for n in self.replicas]

    @property
    def sentinels(self) -> List[Tuple[str, int]]:
        """``(host, port)`` of each Sentinel, as redis-py's ``Sentinel`` takes them."""
        if self._port is None:
            raise RlockdError("the server is not started")
        return [(self.host, p) for p in self._sentinel_ports]

    def current_primary(self) -> Node:
        """The node that is the primary now (each node's ``ROLE``)."""
        for n in self.nodes:
            if _text(n.execute_command("ROLE")[0]) == "master":
                return n
        raise RlockdError("no node is a primary")

    def sentinel_primary(self) -> Tuple[str, int]:
        """Where the Sentinels say the primary is (``SENTINEL GET-MASTER-ADDR-BY-NAME``)."""
        s = Node(self.host, self.sentinels[0][1])
        host, port = s.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.master_name)
        return _text(host), int(port)

    def _repl(self, *args, replica=None):
        if replica is not None:
            args += (replica.port if isinstance(replica, Node) else int(replica),)
        return self.current_primary()._rlockd("REPL", *args)

    def pause_replication(self, replica: Union[None, int, Node] = None) -> int:
        """Holds the stream to the replicas (to ``replica`` only, a port or a Node): writes
        pile up unacknowledged (``WAIT`` times out). Returns how many links."""
        return int(self._repl("PAUSE", replica=replica))

    def resume_replication(self, replica: Union[None, int, Node] = None) -> int:
        """Lets the held stream flow again."""
        return int(self._repl("RESUME", replica=replica))

    def set_replication_lag(self, ms: int, replica: Union[None, int, Node] = None) -> int:
        """Delivers each write ``ms`` after it was made (0: at once)."""
        return int(self._repl("LAG", int(ms), replica=replica))

    def drop_replication(self, replica: Union[None, int, Node] = None) -> int:
        """Loses what the replicas have not received yet, as a crash would; returns how many
        writes were lost."""
        return int(self._repl("DROP", replica=replica))

    def break_replication(self, replica: Union[None, int, Node] = None) -> int:
        """Takes the links down (``master_link_status:down``)."""
        return int(self._repl("BREAK", replica=replica))

    def restore_replication(self, replica: Union[None, int, Node] = None) -> int:
        """Brings the links back; the replicas catch up."""
        return int(self._repl("RESTORE", replica=replica))

    def replication_status(self) -> List[ReplicationLink]:
        """The current primary's links."""
        return [_link(flat) for flat in self._repl("STATUS")]

    def failover(self, replica: Union[None, int, Node] = None) -> Node:
        """Promotes a replica (``replica``, else the first) with what it has received now; the
        old primary becomes its replica and the Sentinels announce ``+switch-master``.
        Returns the new primary once it is done and the Sentinels name it."""
        self._repl("FAILOVER", replica=replica)
        new = self.current_primary()
        deadline = time.monotonic() + 10  # the Sentinels look every 20 ms
        while self._sentinel_ports and self.sentinel_primary() != (new.host, new.port):
            if time.monotonic() > deadline:
                raise RlockdError(f"the Sentinels still name {self.sentinel_primary()}, not {new}")
            time.sleep(0.01)
        return new

    def _node(self, node: Union[int, Node]) -> Node:
        return node if isinstance(node, Node) else self.nodes[int(node)]

    def take_down(self, node: Union[int, Node]) -> None:
        """Crashes a node (its index or :class:`Node`; ``RLOCKD REPL CRASH``): its port closes,
        its clients are cut, what it had not replicated is lost; the Sentinels notice it after
        ``down-after-milliseconds``, as Redis's do, and fail over from a primary."""
        down = self._node(node)
        self._any_other(down)._rlockd("REPL", "CRASH", down.port)

    def bring_up(self, node: Union[int, Node]) -> None:
        """Starts a crashed node again on its port (``RLOCKD REPL REVIVE``); a former primary
        comes back as a replica once the Sentinels have failed over."""
        up = self._node(node)
        self._any_other(up)._rlockd("REPL", "REVIVE", up.port)

    def _any_other(self, node: Node) -> Node:
        for n in self._up():
            if n.port != node.port:
                return n
        raise RlockdError("no other node answers")

    def locks(self, pattern: Optional[str] = None) -> List[Lock]:
        """The locks on the current primary."""
        return self.current_primary().locks(pattern)

    def lock_events(self, key: Optional[str] = None, since: int = 0) -> List[LockEvent]:
        """The lock events the current primary recorded."""
        return self.current_primary().lock_events(key, since)

    def timeline(self, path=None, **kwargs) -> str:
        """The current primary's timeline (with the grants failovers lost and their marks)."""
        return self.current_primary().timeline(path, **kwargs)

    def claim_enter(self, lock: str, holder) -> None:
        self.current_primary().claim_enter(lock, holder)

    def claim_leave(self, lock: str, holder) -> None:
        self.current_primary().claim_leave(lock, holder)


__all__ = ["Cluster", "Replicated", "ReplicationLink", "ResponseError"]
