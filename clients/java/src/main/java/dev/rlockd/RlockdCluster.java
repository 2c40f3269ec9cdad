package dev.rlockd;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A Redis Cluster in one rlockd process ({@code rlockd --cluster N}), each node on a free
 * port, the slots split as {@code redis-cli --cluster create} splits them:
 *
 * <pre>{@code
 * try (RlockdCluster c = RlockdCluster.start(3)) {
 *     Config config = new Config();
 *     config.useClusterServers().setNodeAddresses(c.urls());   // Redisson
 *     ...
 *     c.moveSlot(slot, 1);                                      // clients get MOVED
 * }
 * }</pre>
 *
 * The clock ({@link #advanceClock}), {@link #locks()}, {@link #checkLocks()} and
 * {@link #assertLocksSafe()} cover every node that is up; {@link #node(int)} has each node's
 * whole test control. {@code RlockdServer.builder().password(...).clusterReplicas(1).startCluster(3)}
 * takes the other options.
 */
public final class RlockdCluster implements AutoCloseable {
    private final Topology topo;

    RlockdCluster(RlockdServer first) {
        this.topo = new Topology(first);
    }

    /** Starts a cluster of {@code primaries} nodes with the default options. */
    public static RlockdCluster start(int primaries) {
        return RlockdServer.builder().startCluster(primaries);
    }

    /** Every node in start order (the index {@link #moveSlot}, {@link #takeDown} and {@link #bringUp} take). */
    public List<RlockdServer> nodes() {
        return topo.nodes;
    }

    public RlockdServer node(int index) {
        return topo.nodes.get(index);
    }

    /** {@code redis://127.0.0.1:PORT} of every node, as Redisson's {@code setNodeAddresses} takes them. */
    public List<String> urls() {
        return topo.urls();
    }

    private RlockdServer any() {
        List<RlockdServer> up = topo.up();
        if (up.isEmpty()) {
            throw new RlockdException("no node of the cluster answers");
        }
        return up.get(0);
    }

    private Object control(String... args) {
        String[] all = new String[args.length + 2];
        all[0] = "RLOCKD";
        all[1] = "CLUSTER";
        System.arraycopy(args, 0, all, 2, args.length);
        return any().command(all);
    }

    /** The key's hash slot ({@code CLUSTER KEYSLOT}). */
    public int keySlot(String key) {
        return (int) Control.integer(any().command("CLUSTER", "KEYSLOT", key));
    }

    /** The index in {@link #nodes()} of the node serving {@code slot} now, -1 if none does. */
    public int slotOwner(int slot) {
        for (Object r : Control.list(any().command("CLUSTER", "SLOTS"))) {
            List<?> range = Control.list(r);
            if (Control.integer(range.get(0)) <= slot && slot <= Control.integer(range.get(1))) {
                long port = Control.integer(Control.list(range.get(2)).get(1));
                return topo.first.nodePorts.indexOf((int) port);
            }
        }
        return -1;
    }

    /** Moves {@code slot} with its keys to node {@code node}: clients get MOVED. Returns how many keys moved. */
    public long moveSlot(int slot, int node) {
        return Control.integer(control("MOVESLOT", Integer.toString(slot), Integer.toString(node)));
    }

    /**
     * Moves only {@code keys} more keys of {@code slot} to {@code node} and leaves the slot
     * MIGRATING/IMPORTING: clients get ASK, multi-key commands TRYAGAIN.
     */
    public long moveSlotKeys(int slot, int node, int keys) {
        return Control.integer(control("MOVESLOT", Integer.toString(slot), Integer.toString(node), "KEYS",
                Integer.toString(keys)));
    }

    /** Stops a node: its clients are cut, its port refuses, the others answer CLUSTERDOWN. */
    public void takeDown(int node) {
        control("DOWN", Integer.toString(node));
    }

    /** Starts a node taken down again, on its port, with its keys. */
    public void bringUp(int node) {
        control("UP", Integer.toString(node));
    }

    private boolean isPrimary(RlockdServer n) {
        return "master".equals(Control.text(Control.list(n.command("ROLE")).get(0)));
    }

    private List<RlockdServer> primaries() {
        List<RlockdServer> out = new ArrayList<>();
        for (RlockdServer n : topo.up()) {
            if (isPrimary(n)) {
                out.add(n);
            }
        }
        return out;
    }

    /** RLOCKD REPL on every primary ({@code node} null), on a primary (its links) or on a replica's primary (that link). */
    private List<Object> repl(Integer node, String... args) {
        List<String> all = new ArrayList<>(List.of("RLOCKD", "REPL"));
        all.addAll(List.of(args));
        List<RlockdServer> targets = primaries();
        if (node != null) {
            RlockdServer n = node(node);
            List<?> role = Control.list(n.command("ROLE"));
            if (isPrimary(n)) {
                targets = List.of(n);
            } else {
                int primaryPort = (int) Control.integer(role.get(2));
                targets = List.of(topo.nodes.get(topo.first.nodePorts.indexOf(primaryPort)));
                all.add(Integer.toString(n.port()));
            }
        }
        List<Object> out = new ArrayList<>();
        for (RlockdServer p : targets) {
            out.add(p.command(all.toArray(new String[0])));
        }
        return out;
    }

    private long replSum(Integer node, String... args) {
        long sum = 0;
        for (Object x : repl(node, args)) {
            sum += Control.integer(x);
        }
        return sum;
    }

    /** Holds the stream to every primary's replicas: writes pile up unacknowledged. Returns how many links. */
    public long pauseReplication() {
        return replSum(null, "PAUSE");
    }

    /** Holds node {@code node}'s links (a primary), or that one link (a replica). */
    public long pauseReplication(int node) {
        return replSum(node, "PAUSE");
    }

    /** Lets the held stream flow again. */
    public long resumeReplication() {
        return replSum(null, "RESUME");
    }

    public long resumeReplication(int node) {
        return replSum(node, "RESUME");
    }

    /** Delivers each write {@code lag} after it was made (zero: at once). */
    public long setReplicationLag(Duration lag) {
        return replSum(null, "LAG", Long.toString(lag.toMillis()));
    }

    public long setReplicationLag(Duration lag, int node) {
        return replSum(node, "LAG", Long.toString(lag.toMillis()));
    }

    /** Loses what the replicas have not received yet; returns how many writes. */
    public long dropReplication() {
        return replSum(null, "DROP");
    }

    public long dropReplication(int node) {
        return replSum(node, "DROP");
    }

    /** Takes the links down ({@code master_link_status:down}). */
    public long breakReplication() {
        return replSum(null, "BREAK");
    }

    public long breakReplication(int node) {
        return replSum(node, "BREAK");
    }

    /** Brings the links back; the replicas catch up. */
    public long restoreReplication() {
        return replSum(null, "RESTORE");
    }

    public long restoreReplication(int node) {
        return replSum(node, "RESTORE");
    }

    /** Every primary's links ({@code RLOCKD REPL STATUS}). */
    public List<ReplicationLink> replicationStatus() {
        List<ReplicationLink> out = new ArrayList<>();
        for (Object links : repl(null, "STATUS")) {
            for (Object x : Control.list(links)) {
                out.add(ReplicationLink.of(x));
            }
        }
        return out;
    }

    /**
     * Promotes node {@code node} (a replica; a primary's index names its first replica) at once
     * with what it has received ({@code RLOCKD CLUSTER FAILOVER}): it takes the slots, its
     * primary becomes its replica. Returns the new primary.
     */
    public RlockdServer failover(int node) {
        control("FAILOVER", Integer.toString(node));
        RlockdServer named = node(node);
        if (isPrimary(named)) {
            return named;
        }
        for (RlockdServer p : primaries()) {
            for (Object r : Control.list(Control.list(p.command("ROLE")).get(2))) {
                if (Long.parseLong(Control.text(Control.list(r).get(1))) == named.port()) {
                    return p;
                }
            }
        }
        throw new RlockdException("no node took over from node " + node);
    }

    /** Moves every node's time; returns the first node's new time (unix ms). */
    public long advanceClock(Duration by) {
        return topo.advanceClock(by);
    }

    public long advanceClock(long ms) {
        return topo.advanceClock(Duration.ofMillis(ms));
    }

    /** The locks of the whole cluster (any node answers for all). */
    public List<LockInfo> locks() {
        for (RlockdServer n : topo.up()) {
            return n.locks();
        }
        return new ArrayList<>();
    }

    /** The violations any node saw. */
    public List<String> checkLocks() {
        return topo.checkLocks();
    }

    /** Throws {@link LocksUnsafeError} if any node saw a violation. */
    public void assertLocksSafe() {
        topo.assertLocksSafe();
    }

    public void resetLockChecks() {
        topo.resetLockChecks();
    }

    /** Everything the process printed so far. */
    public String logs() {
        return topo.first.logs();
    }

    /** Stops the process: every node. */
    @Override
    public void close() {
        topo.first.close();
    }

    @Override
    public String toString() {
        return "RlockdCluster" + urls();
    }
}
