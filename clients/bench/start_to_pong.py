"""Start-to-first-PONG of the Python front end: rlockd.Server().start() until
the first PING is answered (through redis-py, and through srv.execute_command),
N times; prints median, p90 and min in ms. Then a cluster of 3 (rlockd.Cluster(3))
until redis-py's RedisCluster, which reads CLUSTER SLOTS first, answers PING from
every node.

    python start_to_pong.py [N]     # with the rlockd wheel and redis installed
"""
import statistics
import sys
import time

import redis
from redis.cluster import RedisCluster

import rlockd

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
via_client, via_command = [], []
for _ in range(n):
    t0 = time.perf_counter()
    srv = rlockd.Server().start()
    r = redis.Redis(port=srv.port)
    assert r.ping()
    via_client.append((time.perf_counter() - t0) * 1000)
    r.close()
    srv.stop()

    t0 = time.perf_counter()
    srv = rlockd.Server().start()
    assert srv.execute_command("PING") == "PONG"
    via_command.append((time.perf_counter() - t0) * 1000)
    srv.stop()


via_cluster, via_cluster_command = [], []
for _ in range(n):
    t0 = time.perf_counter()
    c = rlockd.Cluster(3).start()
    assert all(node.execute_command("PING") == "PONG" for node in c.nodes)
    via_cluster_command.append((time.perf_counter() - t0) * 1000)
    c.stop()

    t0 = time.perf_counter()
    c = rlockd.Cluster(3).start()
    rc = RedisCluster(startup_nodes=c.startup_nodes)
    assert rc.ping(target_nodes=RedisCluster.ALL_NODES)
    via_cluster.append((time.perf_counter() - t0) * 1000)
    rc.close()
    c.stop()


def stats(xs):
    xs.sort()
    return (f"median {statistics.median(xs):.1f} ms, p90 {xs[int(len(xs) * 0.9) - 1]:.1f} ms, "
            f"min {xs[0]:.1f} ms")


print(f"python start-to-first-PONG over {n}, redis-py: {stats(via_client)}")
print(f"python start-to-first-PONG over {n}, srv.execute_command: {stats(via_command)}")
print(f"python start-to-first-PONG over {n}, a 3-node cluster, RedisCluster (PING on every node): "
      f"{stats(via_cluster)}")
print(f"python start-to-first-PONG over {n}, a 3-node cluster, execute_command on every node: "
      f"{stats(via_cluster_command)}")
