"""The rlockd server process."""

import atexit
import os
import re
import socket
import subprocess
import threading
import time
import weakref

from ._binary import binary_path
from ._control import TestControl
from ._options import checked

READY = re.compile(r"ready to accept connections.*\(port (\d+)\)")
_live = weakref.WeakSet()


class RlockdError(RuntimeError):
    """The server could not be started or answered unexpectedly."""


class ResponseError(RlockdError):
    """An error reply (``-ERR ...``) to :meth:`Server.execute_command`."""


class _Endpoint(TestControl):
    """What a node needs for its test control: ``host``, ``port``, ``password``."""

    @property
    def url(self):
        """``redis://[:password@]host:port`` for redis-py's ``from_url``."""
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}{self.host}:{self.port}"

    def execute_command(self, *args, timeout=10.0):
        """Sends one command on a new connection and returns the decoded reply.

        For test control and checks without a client library: bulk strings come
        back as ``bytes``, status replies as ``str``, errors raise
        :class:`ResponseError`.
        """
        with socket.create_connection((self.host, self.port), timeout=timeout) as sock:
            f = sock.makefile("rwb")
            if self.password:
                f.write(_encode(["AUTH", self.password]))
                f.flush()
                _read_reply(f)
            f.write(_encode(args))
            f.flush()
            return _read_reply(f)

    def ping(self):
        return self.execute_command("PING") == "PONG"


class Node(_Endpoint):
    """One node of a topology (:class:`rlockd.Cluster`, :class:`rlockd.Replicated`):
    its address and its own test control (its keyspace, clock, locks and faults)."""

    def __init__(self, host, port, password=None):
        self.host = host
        self.port = port
        self.password = password

    def __repr__(self):
        return f"<rlockd.Node {self.host}:{self.port}>"


class Server(_Endpoint):
    """One rlockd process on 127.0.0.1.

    ``port=0`` (the default) lets the server pick a free port. ``args`` are
    extra command-line options (``["--notify-keyspace-events", "KEA"]``).
    The server is stopped by :meth:`stop`, at the end of a ``with`` block, at
    interpreter exit, and by the server itself when this process dies (its
    standard input is a pipe from here; end of file makes it exit).

    The test control (``RLOCKD ...``) is there as methods: ``advance_clock``,
    ``locks``, ``lock_events``, ``assert_locks_safe``, ``snapshot``,
    ``add_fault``... (see :class:`rlockd.TestControl`).
    """

    @checked
    def __init__(self, port=0, *, host="127.0.0.1", password=None, args=(), binary=None,
                 startup_timeout=10.0):
        self.host = host
        self.password = password
        self._requested_port = int(port)
        self._args = [str(a) for a in args]
        self._binary = binary
        self._startup_timeout = startup_timeout
        self._proc = None
        self._port = None
        self._log = []
        self._log_lock = threading.Lock()
        self._readers = []
        self._ports = []
        self._sentinel_ports = []

    # Ready lines to wait for: one per node, then one per Sentinel.
    _want_nodes = 1
    _want_sentinels = 0

    # -- lifecycle ---------------------------------------------------------

    def start(self):
        """Starts the process and waits for its ready line. Returns ``self``."""
        if self._proc is not None:
            return self
        exe = binary_path(self._binary)
        self._port, self._ports, self._sentinel_ports = None, [], []
        cmd = [exe, "--port", str(self._requested_port), "--bind", self.host]
        if self.password:
            cmd += ["--requirepass", self.password]
        cmd += self._args
        env = dict(os.environ, RLOCKD_STDIN_WATCHDOG="1", NO_COLOR="1")
        try:
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=env, close_fds=True,
            )
        except OSError as e:
            raise RlockdError(f"could not run {exe}: {e}") from e
        ready = threading.Event()
        for stream, watch in ((self._proc.stdout, True), (self._proc.stderr, False)):
            t = threading.Thread(target=self._pump, args=(stream, watch, ready), daemon=True,
                                 name="rlockd-log")
            t.start()
            self._readers.append(t)
        deadline = time.monotonic() + self._startup_timeout
        while not ready.wait(0.005):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                break
        if self._port is None:
            code = self._proc.poll()
            self._kill()
            for t in self._readers:
                t.join(1)
            self._proc = None
            log = self.logs.strip() or "(no output)"
            if "in use" in log.lower():
                raise RlockdError(
                    f"rlockd could not listen on {self.host}:{self._requested_port}: "
                    f"the port is already in use\n--- rlockd log ---\n{log}")
            why = (f"exited with code {code}" if code is not None
                   else f"printed no ready line within {self._startup_timeout} s")
            raise RlockdError(f"rlockd {why} ({' '.join(cmd)})\n--- rlockd log ---\n{log}")
        _live.add(self)
        return self

    def stop(self, timeout=5.0):
        """Stops the server (SIGTERM, then SIGKILL after ``timeout``). Idempotent."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        _live.discard(self)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdin:
            proc.stdin.close()
        for t in self._readers:
            t.join(1)
        self._readers = []

    def _kill(self):
        if self._proc and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def __repr__(self):
        state = f"port {self._port}" if self.running else "stopped"
        return f"<rlockd.Server {state}>"

    # -- address -----------------------------------------------------------

    @property
    def port(self):
        """The TCP port the server listens on."""
        if self._port is None:
            raise RlockdError("the server is not started")
        return self._port

    @property
    def pid(self):
        return self._proc.pid if self._proc else None

    @property
    def running(self):
        return self._proc is not None and self._proc.poll() is None

    @property
    def logs(self):
        """Everything the server printed so far (stdout and stderr, in arrival order)."""
        with self._log_lock:
            return "".join(self._log)

    def _pump(self, stream, watch, ready):
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace")
            with self._log_lock:
                self._log.append(line)
            m = READY.search(line) if watch else None
            if m:
                port = int(m.group(1))
                if "sentinel" in line:
                    self._sentinel_ports.append(port)
                else:
                    self._ports.append(port)
                if (len(self._ports) >= self._want_nodes
                        and len(self._sentinel_ports) >= self._want_sentinels
                        and self._port is None):
                    self._port = self._ports[0]
                    ready.set()
        stream.close()


def _encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def _read_reply(f):
    line = f.readline()
    if not line.endswith(b"\r\n"):
        raise RlockdError("connection closed by the server")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise ResponseError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise RlockdError(f"unexpected reply {line!r}")


@atexit.register
def _stop_all():
    for srv in list(_live):
        srv.stop(timeout=2.0)
