# Memory per hash key with field TTLs (Redis 7.4's hash-field expiration),
# side by side: `used_memory` growth per key for each shape, on servers that
# are already running. Run it against rlockd --redis-version 8.2.3 and
# redis-server 8.2.3 in one session (BENCHMARKS.md has the figures):
#
#   python3 benches/field_ttl_memory.py PORT [PORT...] [--keys N]
#
# Pipelined over a raw socket (no client library); the shapes are loaded one
# after the other, each into a database of its own (so no shape pays for
# another's keyspace table growing; a FLUSHALL between them would measure
# the allocator's lag in giving memory back, not the keys).
import socket, sys

args = sys.argv[1:]
keys = 100_000
if "--keys" in args:
    i = args.index("--keys")
    keys = int(args[i + 1])
    del args[i:i + 2]
ports = [int(p) for p in args]


def enc(*parts):
    out = [b"*%d\r\n" % len(parts)]
    for p in parts:
        p = p if isinstance(p, bytes) else str(p).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(p), p))
    return b"".join(out)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def read_replies(self, n):
        # Counts top-level replies of simple shapes (+, -, :, $, * of scalars).
        got = 0
        while got < n:
            while True:
                r = self._one()
                if r is None:
                    break
                got += 1
                if got == n:
                    return
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise SystemExit("connection closed")
            self.buf += chunk

    def _one(self):
        b = self.buf
        end = self._end(b, 0)
        if end is None:
            return None
        self.buf = b[end:]
        return True

    def _end(self, b, at):
        nl = b.find(b"\r\n", at)
        if nl < 0:
            return None
        t = b[at:at + 1]
        if t in (b"+", b"-", b":"):
            return nl + 2
        if t == b"$":
            n = int(b[at + 1:nl])
            if n < 0:
                return nl + 2
            end = nl + 2 + n + 2
            return end if len(b) >= end else None
        if t == b"*":
            n = int(b[at + 1:nl])
            pos = nl + 2
            for _ in range(max(n, 0)):
                pos = self._end(b, pos)
                if pos is None:
                    return None
            return pos
        raise SystemExit("unexpected reply %r" % b[at:at + 20])

    def cmd(self, *parts):
        self.send(enc(*parts))
        nl = -1
        while nl < 0:
            self.buf += self.s.recv(1 << 20)
            nl = self.buf.find(b"\r\n")
        # Bulk replies (INFO) need their whole body.
        if self.buf.startswith(b"$"):
            n = int(self.buf[1:nl])
            while len(self.buf) < nl + 2 + n + 2:
                self.buf += self.s.recv(1 << 20)
            body = self.buf[nl + 2:nl + 2 + n]
            self.buf = self.buf[nl + 4 + n:]
            return body
        line = self.buf[:nl]
        self.buf = self.buf[nl + 2:]
        return line


def used(c):
    info = c.cmd("INFO", "memory").decode()
    return int(info.split("used_memory:")[1].split("\r")[0])


SHAPES = [
    ("1 field, no TTL", lambda k: [("HSET", k, "f", "v")]),
    ("1 field with a TTL", lambda k: [("HSET", k, "f", "v"), ("HPEXPIRE", k, 3_600_000, "FIELDS", 1, "f")]),
    ("10 fields, no TTL", lambda k: [("HSET", k, *sum(([f"f{i}", "v"] for i in range(10)), []))]),
    ("10 fields, each with a TTL", lambda k: [("HSET", k, *sum(([f"f{i}", "v"] for i in range(10)), [])),
                                              ("HPEXPIRE", k, 3_600_000, "FIELDS", 10, *[f"f{i}" for i in range(10)])]),
]

for port in ports:
    c = Conn(port)
    server = c.cmd("INFO", "server").decode()
    name = "rlockd" if "rlockd_version" in server or "rlockd" in c.cmd("INFO", "rlockd").decode() else "redis-server"
    version = server.split("redis_version:")[1].split("\r")[0]
    print(f"port {port}: {name} (redis_version {version}), {keys} keys per shape")
    c.cmd("FLUSHALL")
    for n, (label, make) in enumerate(SHAPES):
        c.cmd("SELECT", n + 1)
        before = used(c)
        batch, sent = [], 0
        for i in range(keys):
            for parts in make(f"key:{n}:{i}"):
                batch.append(enc(*parts))
            if len(batch) >= 2000:
                c.send(b"".join(batch))
                c.read_replies(len(batch))
                batch = []
        if batch:
            c.send(b"".join(batch))
            c.read_replies(len(batch))
        after = used(c)
        print(f"  {label:28s} {(after - before) / keys:8.1f} B/key")
    c.cmd("FLUSHALL")
