# The stall a full resynchronisation causes (issue 36): load N small hashes
# into a server, attach `redis-cli --replica` (SYNC, the whole RDB file),
# and have another client PING in a loop; the worst PING latency during the
# sync, beside the worst over a quiet stretch as long before it. rlockd and
# redis-server in the same run, one after the other, each `--rounds` times.
#
# Usage: python3 benches/sync_stall.py [--keys 1000000] [--rounds 2]
#            [--rlockd target/release/rlockd] [--redis /usr/bin/redis-server]
import argparse, socket, subprocess, tempfile, threading, time

ap = argparse.ArgumentParser()
ap.add_argument("--keys", type=int, default=1_000_000)
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--rlockd", default="target/release/rlockd")
ap.add_argument("--redis", default="/usr/bin/redis-server")
ap.add_argument("--redis-cli", default="/usr/bin/redis-cli")
args = ap.parse_args()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def conn(port):
    for _ in range(200):
        try:
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("no server on %d" % port)


def read_reply(s, buf=b""):
    """One whole RESP reply (simple: the replies here are lines or bulks)."""
    while b"\r\n" not in buf:
        buf += s.recv(65536)
    line, rest = buf.split(b"\r\n", 1)
    if line[:1] == b"$" and int(line[1:]) >= 0:
        n = int(line[1:])
        while len(rest) < n + 2:
            rest += s.recv(65536)
        return line + b"\r\n" + rest[: n + 2], rest[n + 2 :]
    return line, rest


def cmd(s, *argv):
    out = b"*%d\r\n" % len(argv)
    for a in argv:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(out)
    r, _ = read_reply(s)
    return r


LOAD = ("for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do "
        "redis.call('HSET', 'h:' .. i, 'a', i, 'b', 'x') end return 1")


def measure(name, start_server):
    port = free_port()
    proc = start_server(port)
    try:
        c = conn(port)
        t0 = time.time()
        step = 50_000
        for lo in range(1, args.keys + 1, step):
            cmd(c, "EVAL", LOAD, 0, lo, min(lo + step - 1, args.keys))
        size = cmd(c, "DBSIZE").decode()
        loaded = time.time() - t0
        p = conn(port)
        stop = threading.Event()
        worst = [0.0]
        count = [0]

        def pinger():
            while not stop.is_set():
                a = time.perf_counter()
                cmd(p, "PING")
                lat = time.perf_counter() - a
                worst[0] = max(worst[0], lat)
                count[0] += 1
                time.sleep(0.0005)

        t = threading.Thread(target=pinger)
        t.start()
        a = time.perf_counter()
        # Line-buffered: redis-cli's stdout is a pipe here.
        rc = subprocess.Popen(["stdbuf", "-oL", args.redis_cli, "-p", str(port), "--replica"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for line in rc.stdout:
            if b"sync done" in line.lower():
                break
        took = time.perf_counter() - a
        time.sleep(0.2)
        during, pings = worst[0], count[0]
        # A quiet stretch as long as the sync, for comparison.
        worst[0] = 0.0
        time.sleep(max(took, 0.5))
        quiet = worst[0]
        stop.set()
        t.join()
        rc.kill()
        rc.wait()
        print("%-22s keys %s (loaded in %.1fs); sync %.2fs; max PING during it %.2f ms (%d pings); "
              "quiet afterwards %.2f ms" % (name, size, loaded, took, during * 1000, pings, quiet * 1000), flush=True)
        return during
    finally:
        proc.terminate()
        proc.wait()


def rlockd(port):
    return subprocess.Popen([args.rlockd, "--port", str(port), "--bind", "127.0.0.1", "--test-control", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def redis(port):
    return subprocess.Popen([args.redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--repl-diskless-sync-delay", "0", "--dir", tempfile.mkdtemp()],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


results = {"rlockd": [], "redis-server 7.0.15": []}
for r in range(args.rounds):
    results["rlockd"].append(measure("rlockd", rlockd))
    results["redis-server 7.0.15"].append(measure("redis-server 7.0.15", redis))
for name, v in results.items():
    print("%-22s max PING during the sync: %s ms" % (name, ", ".join("%.2f" % (x * 1000) for x in v)))
