package dev.rlockd;

/** One replication link of the current primary ({@link RlockdReplicated#replicationStatus()}). */
public final class ReplicationLink {
    private final String primary;
    private final String replica;
    private final long acked;
    private final long pendingWrites;
    private final long pendingBytes;
    private final boolean paused;
    private final long lagMs;
    private final boolean broken;

    ReplicationLink(String primary, String replica, long acked, long pendingWrites, long pendingBytes, boolean paused,
            long lagMs, boolean broken) {
        this.primary = primary;
        this.replica = replica;
        this.acked = acked;
        this.pendingWrites = pendingWrites;
        this.pendingBytes = pendingBytes;
        this.paused = paused;
        this.lagMs = lagMs;
        this.broken = broken;
    }

    /** {@code host:port} */
    public String primary() {
        return primary;
    }

    /** {@code host:port} */
    public String replica() {
        return replica;
    }

    /** The replica's acknowledged offset. */
    public long acked() {
        return acked;
    }

    public long pendingWrites() {
        return pendingWrites;
    }

    public long pendingBytes() {
        return pendingBytes;
    }

    public boolean paused() {
        return paused;
    }

    public long lagMs() {
        return lagMs;
    }

    public boolean broken() {
        return broken;
    }

    @Override
    public String toString() {
        return "ReplicationLink[" + primary + " -> " + replica + ", acked " + acked + ", pending " + pendingWrites
                + " writes/" + pendingBytes + " bytes" + (paused ? ", paused" : "") + (lagMs > 0 ? ", lag " + lagMs + " ms" : "")
                + (broken ? ", broken" : "") + "]";
    }

    /** One link of {@code RLOCKD REPL STATUS}'s reply. */
    static ReplicationLink of(Object reply) {
        var m = Control.map(reply);
        return new ReplicationLink(Control.text(m.get("primary")), Control.text(m.get("replica")),
                Control.integer(m.get("acked")), Control.integer(m.get("pending_writes")),
                Control.integer(m.get("pending_bytes")), Control.integer(m.get("paused")) != 0,
                Control.integer(m.get("lag_ms")), Control.integer(m.get("broken")) != 0);
    }
}
