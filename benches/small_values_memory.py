# Memory per key of small values (issue 40), side by side: rlockd and
# redis-server 7.0.15 started by this script on free ports, the same keys
# loaded into each, `used_memory` growth per key between FROM and N keys
# (so the table's fixed cost and the first keys' allocator warm-up do not
# count), for each shape:
#
#   cargo build --release
#   python3 benches/small_values_memory.py [--keys 200000] [--from 50000]
#       [--rlockd target/release/rlockd] [--redis /usr/bin/redis-server]
#       [--ports RLOCKD_PORT,REDIS_PORT]   (servers already running instead)
#
# Pipelined over a raw socket (no client library); each shape is loaded into
# a database of its own, as in benches/field_ttl_memory.py.
import os, socket, subprocess, sys, time

args = sys.argv[1:]


def opt(name, default):
    if name in args:
        i = args.index(name)
        v = args[i + 1]
        del args[i:i + 2]
        return v
    return default


keys = int(opt("--keys", "200000"))
first = int(opt("--from", "50000"))
rlockd_bin = opt("--rlockd", "target/release/rlockd")
redis_bin = opt("--redis", "/usr/bin/redis-server")
ports_opt = opt("--ports", "")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


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


def zset(n):
    return lambda k: [("ZADD", k, *sum(([j, f"member:{j}"] for j in range(n)), []))]


SHAPES = [
    ("string", lambda k: [("SET", k, "value")]),
    ("string, 36-byte token", lambda k: [("SET", k, "8f2b6c1e-4a7d-4e21-9c3b-5d6e7f809a1b")]),
    ("string, 100 bytes", lambda k: [("SET", k, "v" * 100)]),
    ("hash, 1 field", lambda k: [("HSET", k, "f", "v")]),
    # A held Redisson lock: its hash and its lease.
    ("hash, 1 field, TTL", lambda k: [("HSET", k, "8f2b6c1e-4a7d-4e21-9c3b-5d6e7f809a1b:1", "1"),
                                      ("PEXPIRE", k, "3600000")]),
    ("hash, 10 fields", lambda k: [("HSET", k, *sum(([f"f{i}", "v"] for i in range(10)), []))]),
    ("zset, 1 member", zset(1)),
    ("zset, 10 members", zset(10)),
    # A rate limiter's window or a fair lock's timeouts: millisecond
    # timestamps as scores (a listpack stores them in 8 bytes too).
    ("zset, 10 timestamps", lambda k: [("ZADD", k, *sum(([1733400000000 + 137 * j, f"req:{j}"] for j in range(10)), []))]),
    ("set, 10 integers", lambda k: [("SADD", k, *range(10))]),
    ("set, 1 member", lambda k: [("SADD", k, "member:0")]),
    ("list, 1 element", lambda k: [("RPUSH", k, "8f2b6c1e-4a7d-4e21-9c3b-5d6e7f809a1b:1")]),
    ("list, 10 elements", lambda k: [("RPUSH", k, *(f"item:{j}" for j in range(10)))]),
    # A contended fair lock's queue: three waiters' ids, pushed one by one.
    ("list, 3 waiters", lambda k: [("RPUSH", k, f"8f2b6c1e-4a7d-4e21-9c3b-5d6e7f809a1b:{j}") for j in range(3)]),
    ("list, 20 elements", lambda k: [("RPUSH", k, *(f"item:{j}" for j in range(20)))]),
    ("stream, 1 entry", lambda k: [("XADD", k, "*", "f", "v")]),
]


def load(c, make, n, lo, hi):
    batch = []
    for i in range(lo, hi):
        for parts in make(f"key:{n}:{i}"):
            batch.append(enc(*parts))
        if len(batch) >= 2000:
            c.send(b"".join(batch))
            c.read_replies(len(batch))
            batch = []
    if batch:
        c.send(b"".join(batch))
        c.read_replies(len(batch))


def measure(port):
    c = Conn(port)
    c.cmd("FLUSHALL")
    out = {}
    for n, (label, make) in enumerate(SHAPES):
        c.cmd("SELECT", n + 1)
        load(c, make, n, 0, first)
        before = used(c)
        load(c, make, n, first, keys)
        after = used(c)
        enc_name = c.cmd("OBJECT", "ENCODING", f"key:{n}:0").decode()
        out[label] = ((after - before) / (keys - first), enc_name)
    c.cmd("FLUSHALL")
    return out


procs = []
try:
    if ports_opt:
        ports = [int(p) for p in ports_opt.split(",")]
    else:
        ports = [free_port(), free_port()]
        procs.append(subprocess.Popen([rlockd_bin, "--port", str(ports[0]), "--bind", "127.0.0.1"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen([redis_bin, "--port", str(ports[1]), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for p in ports:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", p)).close()
                    break
                except OSError:
                    time.sleep(0.05)
    results = [measure(p) for p in ports]
finally:
    for p in procs:
        p.terminate()
        p.wait()

print(f"used_memory growth per key, keys {first}..{keys}")
print(f"{'shape':20s} {'rlockd':>16s} {'redis-server':>22s}")
for label, _ in SHAPES:
    (a, ea), (b, eb) = results[0][label], results[1][label]
    print(f"{label:20s} {a:8.0f} B {ea:10s} {b:8.0f} B {eb:10s}")
