package example;

import java.net.URI;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.RedisException;

/**
 * Redisson in cluster mode on {@code rlockd --cluster 3 --cluster-replicas 1} through a partition
 * of the cluster bus: the lock's primary cut off from the majority (RLOCKD CLUSTER PARTITION),
 * cluster-node-timeout passed on every node's clock (RLOCKD CLOCK ADVANCE), the majority promotes
 * the primary's replica and a second client asks for the same lock there.
 *
 * <ul>
 *   <li>{@code lossy}: a client configured not to wait for a replica
 *       ({@code setCheckLockSyncedSlaves(false)}) takes the lock on the cut-off primary; the second
 *       client gets it on the promoted replica, RLOCKD CHECK names the two holders and the
 *       partition, and after HEAL the first holder's lock is gone.
 *   <li>{@code waited}: the lock is taken before the cut by Redisson's default client, which waits
 *       for a replica to acknowledge it (WAIT); the second client does not get it.
 * </ul>
 * Test control goes over a plain socket ({@link ClusterFailoverMain#call}).
 */
public class ClusterPartitionMain {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("java cluster partition: " + what);
        }
    }

    static String field(String text, String name) {
        for (String l : text.split("\r\n")) {
            if (l.startsWith(name + ":")) {
                return l.substring(name.length() + 1);
            }
        }
        return null;
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        String address = args.length > 0 ? args[0] : "redis://127.0.0.1:7000";
        String mode = args.length > 1 ? args[1] : "lossy";
        int seed = URI.create(address).getPort();
        for (String tag : new String[] {"a", "b", "c"}) {
            String key = "{" + tag + "}:hello";
            int owner = ClusterFailoverMain.nodePort(
                    ClusterFailoverMain.range(seed, (Long) ClusterFailoverMain.call(seed, "CLUSTER", "KEYSLOT", key)), 2);
            check("OK".equals(ClusterFailoverMain.call(owner, "SET", key, "world")), "SET");
        }
        ClusterFailoverMain.waitFor("every replica in CLUSTER SLOTS", () -> {
            try {
                return ((List<Object>) ClusterFailoverMain.call(seed, "CLUSTER", "SLOTS")).stream()
                        .allMatch(r -> ((List<Object>) r).size() == 4);
            } catch (java.io.IOException e) {
                return false;
            }
        });
        String name = "order:42";
        long slot = (Long) ClusterFailoverMain.call(seed, "CLUSTER", "KEYSLOT", name);
        List<Object> r = ClusterFailoverMain.range(seed, slot);
        int ownerPort = ClusterFailoverMain.nodePort(r, 2);
        int replicaPort = ClusterFailoverMain.nodePort(r, 3);
        int other = ClusterFailoverMain.nodePort(ClusterFailoverMain.range(seed, (slot + 8000) % 16384), 2);
        java.util.Set<Integer> ports = new java.util.TreeSet<>();
        for (Object e : (List<Object>) ClusterFailoverMain.call(seed, "CLUSTER", "SLOTS")) {
            List<Object> entry = (List<Object>) e;
            for (int i = 2; i < entry.size(); i++) {
                ports.add(ClusterFailoverMain.nodePort(entry, i));
            }
        }

        RedissonClient synced = ClusterFailoverMain.client(address);
        RedissonClient unsynced = ClusterFailoverMain.client(address, false);
        RedissonClient second = null;
        try {
            RLock first = null;
            RedissonClient firstClient = mode.equals("waited") ? synced : unsynced;
            if (mode.equals("waited")) {
                first = synced.getLock(name);
                check(first.tryLock(1, 120, TimeUnit.SECONDS), "the lock before the cut, acknowledged");
            }
            String cut = (String) ClusterFailoverMain.call(other, "RLOCKD", "CLUSTER", "PARTITION", ownerPort);
            check(cut.startsWith("127.0.0.1:" + ownerPort + " | "), "the partition: " + cut);
            if (mode.equals("lossy")) {
                // The cut-off primary still grants (nothing reaches its replica): a client that
                // does not wait for a replica takes the lock there.
                first = unsynced.getLock(name);
                check(first.tryLock(1, 120, TimeUnit.SECONDS), "the first holder on the cut-off primary");
            }
            for (int p : ports) {
                ClusterFailoverMain.call(p, "RLOCKD", "CLOCK", "ADVANCE", 15001);
            }
            ClusterFailoverMain.waitFor("the majority to promote the replica",
                    ClusterFailoverMain.primaryIs(other, slot, replicaPort));
            ClusterFailoverMain.waitFor("the cut-off primary to refuse", () -> {
                try {
                    return "fail".equals(field((String) ClusterFailoverMain.call(ownerPort, "CLUSTER", "INFO"),
                            "cluster_state"));
                } catch (java.io.IOException e) {
                    return false;
                }
            });
            // The second client starts on the majority side; the promoted replica has no replica
            // of its own now, so it does not wait for one.
            second = ClusterFailoverMain.client("redis://127.0.0.1:" + other, false);
            boolean secondHolder = second.getLock(name).tryLock(1, 120, TimeUnit.SECONDS);
            List<Object> violations = (List<Object>) ClusterFailoverMain.call(other, "RLOCKD", "CHECK");
            for (Object v : violations) {
                check(((String) v).contains("partition") && ((String) v).contains(name), "CHECK: " + v);
            }
            String healed = (String) ClusterFailoverMain.call(other, "RLOCKD", "CLUSTER", "PARTITION", "HEAL");
            check(healed.equals("127.0.0.1:" + ownerPort), "the old primary rejoins: " + healed);
            ClusterFailoverMain.waitFor("the old primary to resynchronise", () -> {
                try {
                    return "up".equals(field((String) ClusterFailoverMain.call(ownerPort, "INFO", "replication"),
                            "master_link_status"));
                } catch (java.io.IOException e) {
                    return false;
                }
            });
            // The lock's holder now, on the new primary: Redisson's lock is a hash whose field is
            // the holder's client id and thread.
            List<Object> holders = (List<Object>) ClusterFailoverMain.call(replicaPort, "HKEYS", name);
            boolean firstHolds = holders.size() == 1 && ((String) holders.get(0)).startsWith(firstClient.getId() + ":");
            System.out.println(mode + ": second-holder=" + secondHolder
                    + " violations=" + violations.size() + " first-holds-after-heal=" + firstHolds);
            for (Object v : violations) {
                System.out.println(v);
            }
        } finally {
            for (RedissonClient c : new RedissonClient[] {synced, unsynced, second}) {
                if (c != null) {
                    c.shutdown();
                }
            }
        }
    }
}
