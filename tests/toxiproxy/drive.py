"""toxiproxy-python drives rlockd's Toxiproxy API while redis-py's Lock
observes each fault through the proxy.

Usage: drive.py API_PORT RLOCKD_PORT. Prints one line per fault; exits
non-zero on the first check that fails.
"""
import sys
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from toxiproxy import Toxiproxy

api_port, node_port = int(sys.argv[1]), int(sys.argv[2])
server = Toxiproxy()
server.update_api_consumer("127.0.0.1", api_port)

assert server.running(), "the API does not answer"
assert b'"version": "2.12.0"' in server.version(), server.version()
# Each rlockd node is listed as a proxy.
listed = server.proxies()
assert f"rlockd-{node_port}" in listed, listed
assert listed[f"rlockd-{node_port}"].upstream == f"127.0.0.1:{node_port}"

proxy = server.create(name="redis", upstream=f"127.0.0.1:{node_port}", listen="127.0.0.1:0")
port = int(proxy.listen.rsplit(":", 1)[1])
direct = redis.Redis(port=node_port)


def client(timeout=2.0):
    # No retries: each fault is seen by the call it hits.
    return redis.Redis(port=port, socket_timeout=timeout, retry=Retry(NoBackoff(), 0))


def fails(fn, errors):
    try:
        fn()
    except errors as e:
        return type(e).__name__
    raise AssertionError(f"{fn} did not fail")


def lock_cycle(r, name="toxi:lock"):
    lock = r.lock(name, timeout=10)
    assert lock.acquire(blocking=False), "lock not acquired"
    assert lock.owned()
    lock.release()


# latency: every reply held back 300 ms (downstream).
r = client()
lock_cycle(r)
proxy.add_toxic(type="latency", attributes={"latency": 300})
start = time.monotonic()
lock_cycle(r)  # SET NX PX, GET (owned), EVALSHA (release): three replies
elapsed = time.monotonic() - start
assert elapsed >= 0.9, elapsed
proxy.destroy_toxic("latency_downstream")
print("latency: three replies held back 300 ms each")

# timeout: no reply passes (its connection handshake's neither); the lock
# call times out on the client.
proxy.add_toxic(type="timeout", attributes={"timeout": 0})
r = client(timeout=0.5)
name = fails(lambda: r.lock("toxi:t", timeout=10).acquire(blocking=False), redis.exceptions.TimeoutError)
proxy.destroy_toxic("timeout_downstream")
print(f"timeout: the lock call failed with {name}")

# reset_peer: the reply never comes, the connection is reset.
proxy.add_toxic(type="reset_peer", attributes={"timeout": 0})
r = client()
name = fails(lambda: r.lock("toxi:r", timeout=10).acquire(blocking=False), redis.exceptions.ConnectionError)
proxy.destroy_toxic("reset_peer_downstream")
print(f"reset_peer: the lock call failed with {name}")

# slicer: replies cut into 1-byte pieces, 200 µs apart; the client reassembles.
proxy.add_toxic(type="slicer", attributes={"average_size": 1, "size_variation": 0, "delay": 200})
r = client()
value = b"v" * 2000
direct.set("toxi:big", value)
start = time.monotonic()
assert r.get("toxi:big") == value
assert time.monotonic() - start >= 2000 * 200e-6 * 0.9
lock_cycle(r)
proxy.destroy_toxic("slicer_downstream")
print("slicer: a 2000-byte reply arrived in pieces and read whole; the lock works")

# down: the proxy disabled refuses connections, then comes back.
r = client()
lock_cycle(r)
with proxy.down():
    name = fails(lambda: lock_cycle(r), redis.exceptions.ConnectionError)
    assert server.get_proxy("redis").enabled is False
lock_cycle(client())
print(f"down: the lock call failed with {name}; enabled again, it works")

# bandwidth: 20 KB/s downstream; a 10 KB reply takes about half a second.
proxy.add_toxic(type="bandwidth", attributes={"rate": 20})
r = client()
value = b"b" * 10000
direct.set("toxi:big", value)
start = time.monotonic()
assert r.get("toxi:big") == value
elapsed = time.monotonic() - start
assert elapsed >= 0.4, elapsed
proxy.destroy_toxic("bandwidth_downstream")
print("bandwidth: 10000 bytes at 20 KB/s took at least 0.4 s")

# limit_data: an open connection closes once 8 more bytes went downstream.
r = client()
assert r.ping()
proxy.add_toxic(type="limit_data", attributes={"bytes": 8})
assert r.ping()  # +PONG\r\n: 7 bytes
name = fails(lambda: r.get("toxi:big"), redis.exceptions.ConnectionError)
proxy.destroy_toxic("limit_data_downstream")
print(f"limit_data: the reply past 8 bytes failed with {name}")

# slow_close upstream, toxicity, listing; then /reset clears every toxic.
proxy.add_toxic(type="slow_close", stream="upstream", attributes={"delay": 100})
proxy.add_toxic(type="timeout", name="never", toxicity=0.0, attributes={"timeout": 0})
toxics = proxy.toxics()
assert sorted(toxics) == ["never", "slow_close_upstream"], toxics
assert toxics["never"].toxicity == 0 and toxics["never"].attributes == {"timeout": 0}
lock_cycle(client())  # toxicity 0: the timeout, which would hold every reply, never applies
server.reset()
assert proxy.toxics() == {}
print("reset: every toxic removed")

proxy.destroy()
assert server.get_proxy("redis") is None
print("toxiproxy-python: ok")
