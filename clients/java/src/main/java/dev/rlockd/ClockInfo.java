package dev.rlockd;

/** The server's clock ({@link RlockdServer#clockInfo()}). */
public final class ClockInfo {
    private final long nowMs;
    private final long offsetMs;
    private final boolean frozen;

    ClockInfo(long nowMs, long offsetMs, boolean frozen) {
        this.nowMs = nowMs;
        this.offsetMs = offsetMs;
        this.frozen = frozen;
    }

    /** The server's time, unix ms. */
    public long nowMs() {
        return nowMs;
    }

    /** How far it is from the system clock, in ms. */
    public long offsetMs() {
        return offsetMs;
    }

    public boolean frozen() {
        return frozen;
    }

    @Override
    public String toString() {
        return "ClockInfo[" + nowMs + ", offset " + offsetMs + " ms" + (frozen ? ", frozen" : "") + "]";
    }
}
