package example;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RBucket;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * A contended Redisson run for rlockd's recorder (tests/it/record_replay.rs records it and replays it).
 *
 * <pre>mvn -q compile exec:java -Dexample.main=example.RecordMain -Dexec.args="PRIMARY_PORT REPLICA_PORT"</pre>
 *
 * 16 threads take 3 RLocks in turn, each holding lock {@code n} while it reads counter {@code n}
 * and writes it back plus one, under an injected latency on the commands of {@code lock:1}
 * (RLOCKD FAULT LATENCY). Then replication is paused, client A takes {@code order:42} on the
 * primary, the replica is promoted (RLOCKD REPL FAILOVER) and client B takes the same lock there.
 * Prints the counters' total and whether B got the lock. Test control goes over a plain socket.
 */
public class RecordMain {
    public static void main(String[] args) throws Exception {
        int primary = Integer.parseInt(args[0]);
        int replica = Integer.parseInt(args[1]);
        FailoverMain.command(primary, "RLOCKD", "FAULT", "LATENCY", "2", "KEY", "lock:1", "TIMES", "30");
        RedissonClient a = client(primary);
        try {
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 16; t++) {
                final int id = t;
                Thread th = new Thread(() -> work(a, id, 6));
                threads.add(th);
                th.start();
            }
            for (Thread th : threads) {
                th.join();
            }
            long total = 0;
            for (int n = 0; n < 3; n++) {
                String v = a.<String>getBucket("counter:" + n, StringCodec.INSTANCE).get();
                total += v == null ? 0 : Long.parseLong(v);
            }
            FailoverMain.command(primary, "RLOCKD", "REPL", "PAUSE");
            boolean first = a.getLock("order:42").tryLock(0, 30, TimeUnit.SECONDS);
            FailoverMain.command(primary, "RLOCKD", "REPL", "FAILOVER", String.valueOf(replica));
            RedissonClient b = client(replica);
            try {
                boolean second = b.getLock("order:42").tryLock(0, 30, TimeUnit.SECONDS);
                System.out.println("total=" + total + " first=" + first + " second=" + second);
            } finally {
                b.shutdown();
            }
        } finally {
            a.shutdown();
        }
    }

    static void work(RedissonClient c, int t, int rounds) {
        for (int i = 0; i < rounds; i++) {
            int n = (t + i) % 3;
            RLock lock = c.getLock("lock:" + n);
            lock.lock(10, TimeUnit.SECONDS);
            try {
                RBucket<String> counter = c.getBucket("counter:" + n, StringCodec.INSTANCE);
                String v = counter.get();
                counter.set(String.valueOf((v == null ? 0 : Long.parseLong(v)) + 1));
            } finally {
                lock.unlock();
            }
        }
    }

    static RedissonClient client(int port) {
        Config config = new Config();
        // The replica acknowledges nothing while paused: grant the lock anyway, as Redis locks
        // did before Redisson's check.
        config.setCheckLockSyncedSlaves(false);
        config.useSingleServer().setAddress("redis://127.0.0.1:" + port);
        return Redisson.create(config);
    }
}
