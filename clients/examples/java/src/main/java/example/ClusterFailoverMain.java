package example;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.api.redisnode.RedisNodes;
import org.redisson.client.RedisException;
import org.redisson.config.Config;

/**
 * Redisson in cluster mode on {@code rlockd --cluster 3 --cluster-replicas 1}, an RLock held
 * through what a cluster does under it: its slot moved to another node (half-way first: the lock
 * key moved, the slot still migrating, so its owner answers ASK) and released afterwards; its
 * primary failed over to a replica that has everything (the lock survives and is released through
 * the new primary); and the replication stream paused: Redisson's WAIT after the lock says no
 * replica has it and Redisson gives it back; a client configured not to check takes it, a failover
 * follows, a second client acquires the lock the promoted replica never got, and RLOCKD CHECK
 * reports the two holders.
 * Test control goes over a plain socket (Redisson has no call for commands it does not know).
 *
 * <p>Redisson learns a new slot owner or a new primary from its periodic topology scan and
 * rebuilds its slot map then: a command sent while that scan is applying the change can fail on
 * the client side ({@code RedisNodeNotFoundException}, or a MOVED redirect to a node it is
 * dropping). The example therefore scans often and, after each change, waits until Redisson's own
 * view has caught up before using the lock again, as a test on a real cluster would.
 */
public class ClusterFailoverMain {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("java cluster failover: " + what);
        }
    }

    /** One command on one node, its reply as String, Long, List or an exception for an error. */
    static Object call(int port, Object... args) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            OutputStream out = s.getOutputStream();
            StringBuilder b = new StringBuilder("*" + args.length + "\r\n");
            for (Object a : args) {
                byte[] bytes = String.valueOf(a).getBytes(StandardCharsets.UTF_8);
                b.append('$').append(bytes.length).append("\r\n").append(String.valueOf(a)).append("\r\n");
            }
            out.write(b.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            return read(new BufferedInputStream(s.getInputStream()));
        }
    }

    static String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) != '\r') {
            check(c >= 0, "connection closed");
            b.append((char) c);
        }
        in.read();
        return b.toString();
    }

    static Object read(InputStream in) throws IOException {
        int type = in.read();
        String l = line(in);
        switch (type) {
            case '+':
                return l;
            case '-':
                throw new IllegalStateException("java cluster failover: error reply " + l);
            case ':':
                return Long.parseLong(l);
            case '$': {
                int n = Integer.parseInt(l);
                if (n < 0) {
                    return null;
                }
                byte[] bytes = in.readNBytes(n + 2);
                return new String(bytes, 0, n, StandardCharsets.UTF_8);
            }
            case '*': {
                int n = Integer.parseInt(l);
                List<Object> items = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    items.add(read(in));
                }
                return items;
            }
            default:
                throw new IllegalStateException("java cluster failover: unexpected reply type " + (char) type);
        }
    }

    /** The CLUSTER SLOTS entry of {@code slot}: start, end, primary [ip, port, id], replicas. */
    @SuppressWarnings("unchecked")
    static List<Object> range(int port, long slot) throws IOException {
        for (Object r : (List<Object>) call(port, "CLUSTER", "SLOTS")) {
            List<Object> e = (List<Object>) r;
            if ((Long) e.get(0) <= slot && slot <= (Long) e.get(1)) {
                return e;
            }
        }
        throw new IllegalStateException("java cluster failover: slot " + slot + " not served");
    }

    @SuppressWarnings("unchecked")
    static int nodePort(List<Object> range, int i) {
        return ((Long) ((List<Object>) range.get(i)).get(1)).intValue();
    }

    @SuppressWarnings("unchecked")
    static String nodeId(List<Object> range, int i) {
        return (String) ((List<Object>) range.get(i)).get(2);
    }

    /** Waits for a state of the cluster (bounded: a hang guard). */
    static void waitFor(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!cond.getAsBoolean()) {
            check(System.nanoTime() < deadline, "timed out waiting for " + what);
            Thread.sleep(10);
        }
    }

    static BooleanSupplier primaryIs(int seed, long slot, int port) {
        return () -> {
            try {
                return nodePort(range(seed, slot), 2) == port;
            } catch (IOException e) {
                return false;
            }
        };
    }

    static RedissonClient client(String address) {
        return client(address, true);
    }

    /** How often Redisson re-reads the topology (its default is 5 s). */
    static final int SCAN_MS = 100;

    /** With {@code checkSynced}, Redisson's default: a lock no replica acknowledged is refused. */
    static RedissonClient client(String address, boolean checkSynced) {
        Config config = new Config();
        config.setCheckLockSyncedSlaves(checkSynced);
        config.useClusterServers().setScanInterval(SCAN_MS).addNodeAddress(address);
        return Redisson.create(config);
    }

    /** Whether Redisson's own view lists a primary on {@code port}. */
    static boolean redissonSeesPrimary(RedissonClient c, int port) {
        return c.getRedisNodes(RedisNodes.CLUSTER).getMasters().stream()
                .anyMatch(m -> m.getAddr().getPort() == port);
    }

    /**
     * Waits until each client's view has {@code primary} and not {@code gone} as a primary, then
     * a few scans more, so no scan is still applying the change when the test goes on.
     */
    static void redissonCaughtUp(int primary, int gone, RedissonClient... clients) throws InterruptedException {
        for (RedissonClient c : clients) {
            waitFor("Redisson to see the new primary",
                    () -> redissonSeesPrimary(c, primary) && (gone < 0 || !redissonSeesPrimary(c, gone)));
        }
        Thread.sleep(5L * SCAN_MS);
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        String address = args.length > 0 ? args[0] : "redis://127.0.0.1:7000";
        int seed = URI.create(address).getPort();
        // A replica is listed in CLUSTER SLOTS once it has received something (as on Redis).
        for (String tag : new String[] {"a", "b", "c"}) {
            String key = "{" + tag + "}:hello";
            int owner = nodePort(range(seed, (Long) call(seed, "CLUSTER", "KEYSLOT", key)), 2);
            check("OK".equals(call(owner, "SET", key, "world")), "SET");
        }
        waitFor("every replica in CLUSTER SLOTS", () -> {
            try {
                return ((List<Object>) call(seed, "CLUSTER", "SLOTS")).stream()
                        .allMatch(r -> ((List<Object>) r).size() == 4);
            } catch (IOException e) {
                return false;
            }
        });
        RedissonClient redisson = client(address);
        RedissonClient second = null;
        RedissonClient unsynced = null;
        try {
            // 1. The slot of a held lock moves: the lock key first (the old owner answers
            //    ASK), then the rest; the lock is released after the move.
            RLock moving = redisson.getLock("example:reshard");
            check(moving.tryLock(1, 30, TimeUnit.SECONDS), "lock before the move");
            long slot = redisson.getKeys().getSlot("example:reshard");
            List<Object> r = range(seed, slot);
            int ownerPort = nodePort(r, 2);
            List<Object> target = range(seed, (slot + 8000) % 16384);
            String targetId = nodeId(target, 2);
            check((Long) call(seed, "RLOCKD", "CLUSTER", "MOVESLOT", slot, targetId, "KEYS", 1) == 1,
                    "the lock key moved");
            check(moving.isHeldByCurrentThread(), "held while its slot migrates (ASK)");
            check((Long) call(seed, "RLOCKD", "CLUSTER", "MOVESLOT", slot, targetId) == 0, "the slot moved");
            check(nodePort(range(seed, slot), 2) != ownerPort, "the slot has a new owner");
            // Both nodes stay primaries: give Redisson's scan time to move the slot in its map.
            redissonCaughtUp(nodePort(target, 2), -1, redisson);
            moving.unlock(); // MOVED to the new owner
            check(!moving.isLocked(), "released after the slot moved");

            // 2. CLUSTER FAILOVER sent to the replica: it waits until it has all its primary
            //    wrote, then takes the slots. The lock survives and is released.
            String name = "example:failover";
            RLock lock = redisson.getLock(name);
            lock.lock(); // with Redisson's watchdog
            slot = redisson.getKeys().getSlot(name);
            r = range(seed, slot);
            int primaryPort = nodePort(r, 2);
            int replicaPort = nodePort(r, 3);
            String replicaId = nodeId(r, 3);
            check("OK".equals(call(replicaPort, "CLUSTER", "FAILOVER")), "CLUSTER FAILOVER");
            waitFor("the replica to take the slot", primaryIs(seed, slot, replicaPort));
            redissonCaughtUp(replicaPort, primaryPort, redisson);
            check(lock.isHeldByCurrentThread(), "the lock survives a failover without loss");
            lock.unlock();
            check(!lock.isLocked(), "released through the new primary");

            // 3. The stream to the new primary's replica paused, the lock taken, and a
            //    failover at once (test control, with what the replica has).
            check((Long) call(replicaPort, "RLOCKD", "REPL", "PAUSE") == 1, "pause the stream");
            // Redisson waits for a replica to acknowledge the lock (WAIT) and says none did,
            // though the lock is written on the primary.
            String warning = null;
            try {
                lock.tryLock(1, 60, TimeUnit.SECONDS);
            } catch (RedisException e) {
                warning = String.valueOf(e.getCause());
            }
            check(warning != null && warning.contains("None of slaves were synced"),
                    "Redisson notices no replica has the lock: " + warning);
            check((Long) call(replicaPort, "EXISTS", name) == 0, "Redisson gave the lock back");
            // A client that does not wait for replicas gets it, on the primary alone.
            unsynced = client(address, false);
            RLock first = unsynced.getLock(name);
            check(first.tryLock(1, 60, TimeUnit.SECONDS), "first holder");
            check((Long) call(replicaPort, "EXISTS", name) == 1, "the lock is held on the primary");
            int other = nodePort(range(seed, (slot + 8000) % 16384), 2);
            check(((List<Object>) call(other, "RLOCKD", "CHECK")).isEmpty(), "no violation yet");
            check("OK".equals(call(other, "RLOCKD", "CLUSTER", "FAILOVER", replicaId)), "test-control failover");
            check(nodePort(range(seed, slot), 2) == primaryPort, "the old primary has the slot back");
            redissonCaughtUp(primaryPort, replicaPort, redisson, unsynced);
            second = client(address);
            RLock theirs = second.getLock(name);
            check(theirs.tryLock(5, 60, TimeUnit.SECONDS), "a second client gets the lock the failover lost");
            List<Object> violations = (List<Object>) call(other, "RLOCKD", "CHECK");
            check(violations.size() == 1 && ((String) violations.get(0)).contains(name),
                    "RLOCKD CHECK reports the two holders: " + violations);
            boolean refused = false;
            try {
                first.unlock();
            } catch (IllegalMonitorStateException e) {
                refused = true; // the first holder's lock is gone
            }
            check(refused, "the first holder released a lock it had lost");
            theirs.unlock();
            check(!theirs.isLocked(), "the second holder released it");
            System.out.println("java cluster failover: ok");
        } finally {
            redisson.shutdown();
            for (RedissonClient c : new RedissonClient[] {second, unsynced}) {
                if (c != null) {
                    c.shutdown();
                }
            }
        }
    }
}
