# Active-expiry probe: load ~1M keys with 100 ms TTLs (redis-benchmark), then
# measure how long until every key is reclaimed without being touched, and the
# worst PING latency seen by another client meanwhile.
# Usage: python3 benches/expire_probe.py PORT   (server already running on PORT)
import socket, time, threading, sys, subprocess
port = int(sys.argv[1])
def conn():
    s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1); return s
def cmd(s, line):
    s.sendall(line.encode() + b"\r\n"); return s.recv(65536)
t0 = time.time()
subprocess.run(["redis-benchmark", "-p", str(port), "-n", "1000000", "-r", "1000000000", "-P", "200", "-c", "2", "-q",
                "SET", "key:__rand_int__", "v", "PX", "100"], check=True, stdout=subprocess.DEVNULL)
loaded = time.time()
s = conn(); p = conn()
info = cmd(s, "INFO keyspace").decode()
print("after load (%.2fs): %s" % (loaded - t0, info.strip().splitlines()[-1]))
print(cmd(s, "INFO stats").decode().split("expired_keys:")[1].split("\r")[0], "expired so far")
maxlat = 0.0; n = 0
while True:
    a = time.perf_counter(); cmd(p, "PING"); lat = time.perf_counter() - a
    maxlat = max(maxlat, lat); n += 1

    if n % 50 == 0:
        info = cmd(s, "INFO keyspace").decode()
        if "db0:" not in info:
            break
    time.sleep(0.001)
print("all keys gone %.2fs after loading ended; pings: %d, max PING latency %.2f ms" % (time.time() - loaded, n, maxlat * 1000))
print(cmd(s, "INFO memory").decode().split("used_memory_rss:")[1].split("\r")[0], "bytes RSS")
time.sleep(2)
print(cmd(s, "INFO memory").decode().split("used_memory_rss:")[1].split("\r")[0], "bytes RSS 2 s later")
