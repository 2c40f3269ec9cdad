package dev.rlockd;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A primary with replicas and Sentinels watching it as "mymaster", in one rlockd process
 * ({@code rlockd --replicas N --sentinel 0,0,0}):
 *
 * <pre>{@code
 * try (RlockdReplicated r = RlockdReplicated.start(1, 3)) {
 *     Config config = new Config();
 *     config.useSentinelServers().setMasterName(r.masterName()).setSentinelAddresses(r.sentinelUrls());
 *     ...
 *     r.pauseReplication();          // writes pile up unacknowledged
 *     r.failover();                  // the replica is promoted with what it has
 * }
 * }</pre>
 *
 * The replication controls ({@code RLOCKD REPL ...}) go to the current primary; the clock and
 * the checks cover every node. {@code RlockdServer.builder().password(...).startReplicated(1, 3)}
 * takes the other options.
 */
public final class RlockdReplicated implements AutoCloseable {
    private final Topology topo;

    RlockdReplicated(RlockdServer first) {
        this.topo = new Topology(first);
    }

    /** Starts a primary with {@code replicas} replicas and {@code sentinels} Sentinels. */
    public static RlockdReplicated start(int replicas, int sentinels) {
        return RlockdServer.builder().startReplicated(replicas, sentinels);
    }

    /** The name the Sentinels watch the primary under: {@code "mymaster"}. */
    public String masterName() {
        return "mymaster";
    }

    /** The primary as started ({@link #currentPrimary()} after a failover). */
    public RlockdServer primary() {
        return topo.nodes.get(0);
    }

    /** The replicas as started. */
    public List<RlockdServer> replicas() {
        return topo.nodes.subList(1, topo.nodes.size());
    }

    public List<String> replicaUrls() {
        return topo.urls().subList(1, topo.nodes.size());
    }

    /** The primary, then its replicas, as started. */
    public List<RlockdServer> nodes() {
        return topo.nodes;
    }

    /** The Sentinels' ports. */
    public List<Integer> sentinelPorts() {
        return topo.first.sentinelPorts;
    }

    /** {@code redis://127.0.0.1:PORT} of each Sentinel, as Redisson's {@code setSentinelAddresses} takes them. */
    public List<String> sentinelUrls() {
        List<String> out = new ArrayList<>();
        for (int p : topo.first.sentinelPorts) {
            out.add("redis://" + topo.first.host() + ":" + p);
        }
        return out;
    }

    /** The node that is the primary now (each node's ROLE). */
    public RlockdServer currentPrimary() {
        for (RlockdServer n : topo.nodes) {
            if ("master".equals(Control.text(Control.list(n.command("ROLE")).get(0)))) {
                return n;
            }
        }
        throw new RlockdException("no node is a primary");
    }

    /** Where the Sentinels say the primary is: {@code host:port} ({@code SENTINEL GET-MASTER-ADDR-BY-NAME}). */
    public String sentinelPrimary() {
        if (topo.first.sentinelPorts.isEmpty()) {
            throw new RlockdException("started without Sentinels");
        }
        RlockdServer s = topo.first.sentinel(topo.first.sentinelPorts.get(0));
        List<?> addr = Control.list(s.command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterName()));
        return Control.text(addr.get(0)) + ":" + Control.text(addr.get(1));
    }

    /** Returns the primary once the Sentinels name it (they look every 20 ms). */
    private RlockdServer named(RlockdServer primary) {
        String want = primary.host() + ":" + primary.port();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!topo.first.sentinelPorts.isEmpty() && !want.equals(sentinelPrimary())) {
            if (System.nanoTime() > deadline) {
                throw new RlockdException("the Sentinels still name " + sentinelPrimary() + ", not " + want);
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RlockdException("interrupted while waiting for the Sentinels");
            }
        }
        return primary;
    }

    private long repl(Integer replicaPort, String... args) {
        List<String> all = new ArrayList<>(List.of("RLOCKD", "REPL"));
        all.addAll(List.of(args));
        if (replicaPort != null) {
            all.add(Integer.toString(replicaPort));
        }
        return Control.integer(currentPrimary().command(all.toArray(new String[0])));
    }

    /** Holds the stream to the replicas: writes pile up unacknowledged. Returns how many links. */
    public long pauseReplication() {
        return repl(null, "PAUSE");
    }

    /** Holds the stream to the replica on {@code replicaPort} only. */
    public long pauseReplication(int replicaPort) {
        return repl(replicaPort, "PAUSE");
    }

    /** Lets the held stream flow again. */
    public long resumeReplication() {
        return repl(null, "RESUME");
    }

    public long resumeReplication(int replicaPort) {
        return repl(replicaPort, "RESUME");
    }

    /** Delivers each write {@code lag} after it was made (zero: at once). */
    public long setReplicationLag(Duration lag) {
        return repl(null, "LAG", Long.toString(lag.toMillis()));
    }

    public long setReplicationLag(Duration lag, int replicaPort) {
        return repl(replicaPort, "LAG", Long.toString(lag.toMillis()));
    }

    /** Loses what the replicas have not received yet, as a crash would; returns how many writes. */
    public long dropReplication() {
        return repl(null, "DROP");
    }

    public long dropReplication(int replicaPort) {
        return repl(replicaPort, "DROP");
    }

    /** Takes the links down ({@code master_link_status:down}). */
    public long breakReplication() {
        return repl(null, "BREAK");
    }

    public long breakReplication(int replicaPort) {
        return repl(replicaPort, "BREAK");
    }

    /** Brings the links back; the replicas catch up. */
    public long restoreReplication() {
        return repl(null, "RESTORE");
    }

    public long restoreReplication(int replicaPort) {
        return repl(replicaPort, "RESTORE");
    }

    /** The current primary's links ({@code RLOCKD REPL STATUS}). */
    public List<ReplicationLink> replicationStatus() {
        List<ReplicationLink> out = new ArrayList<>();
        for (Object x : Control.list(currentPrimary().command("RLOCKD", "REPL", "STATUS"))) {
            out.add(ReplicationLink.of(x));
        }
        return out;
    }

    /**
     * Promotes the first replica with what it has received now; the old primary becomes its
     * replica and the Sentinels announce +switch-master. Returns the new primary once done
     * and the Sentinels name it.
     */
    public RlockdServer failover() {
        currentPrimary().command("RLOCKD", "REPL", "FAILOVER");
        return named(currentPrimary());
    }

    /** Promotes the replica on {@code replicaPort}. */
    public RlockdServer failover(int replicaPort) {
        currentPrimary().command("RLOCKD", "REPL", "FAILOVER", Integer.toString(replicaPort));
        return named(currentPrimary());
    }

    /** {@code redis://127.0.0.1:PORT} of every node, the primary as started first. */
    public List<String> urls() {
        return topo.urls();
    }

    private void viaOther(int node, String what) {
        RlockdServer target = topo.nodes.get(node);
        for (RlockdServer n : topo.up()) {
            if (n.port() != target.port()) {
                n.command("RLOCKD", "REPL", what, Integer.toString(target.port()));
                return;
            }
        }
        throw new RlockdException("no other node answers");
    }

    /**
     * Crashes node {@code node} (its index in {@link #nodes()}; {@code RLOCKD REPL CRASH}): its
     * port closes, its clients are cut, what it had not replicated is lost; the Sentinels
     * notice it after down-after-milliseconds and fail over from a primary.
     */
    public void takeDown(int node) {
        viaOther(node, "CRASH");
    }

    /** Starts a crashed node again on its port ({@code RLOCKD REPL REVIVE}). */
    public void bringUp(int node) {
        viaOther(node, "REVIVE");
    }

    /** The locks on the current primary. */
    public List<LockInfo> locks() {
        return currentPrimary().locks();
    }

    public List<LockInfo> locks(String pattern) {
        return currentPrimary().locks(pattern);
    }

    /** Moves every node's time; returns the primary's new time (unix ms). */
    public long advanceClock(Duration by) {
        return topo.advanceClock(by);
    }

    public long advanceClock(long ms) {
        return topo.advanceClock(Duration.ofMillis(ms));
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

    /** Stops the process: every node and Sentinel. */
    @Override
    public void close() {
        topo.first.close();
    }

    @Override
    public String toString() {
        return "RlockdReplicated[nodes " + topo.urls() + ", sentinels " + sentinelPorts() + "]";
    }
}
