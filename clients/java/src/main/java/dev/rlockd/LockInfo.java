package dev.rlockd;

import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;

/**
 * A lock as the server reads it out of the keyspace ({@link RlockdServer#locks()}).
 *
 * <p>Kinds: {@code reentrant} (Redisson RLock), {@code fair} (RFairLock), {@code read-write}
 * (RReadWriteLock), {@code token} ({@code SET key token NX PX}), {@code counter} (RSemaphore,
 * RCountDownLatch), {@code zset-semaphore} (RPermitExpirableSemaphore).
 */
public final class LockInfo {
    private final String key;
    private final int db;
    private final String kind;
    private final Optional<String> mode;
    private final OptionalLong leaseMs;
    private final OptionalLong value;
    private final List<Holder> holders;
    private final List<Waiter> waiters;

    LockInfo(String key, int db, String kind, Optional<String> mode, OptionalLong leaseMs, OptionalLong value,
            List<Holder> holders, List<Waiter> waiters) {
        this.key = key;
        this.db = db;
        this.kind = kind;
        this.mode = mode;
        this.leaseMs = leaseMs;
        this.value = value;
        this.holders = List.copyOf(holders);
        this.waiters = List.copyOf(waiters);
    }

    public String key() {
        return key;
    }

    public int db() {
        return db;
    }

    public String kind() {
        return kind;
    }

    /** {@code read} or {@code write} for a read-write lock. */
    public Optional<String> mode() {
        return mode;
    }

    /** Remaining TTL of the lock's key in ms (empty: no TTL). */
    public OptionalLong leaseMs() {
        return leaseMs;
    }

    /** A counter's value (free permits, a latch's count). */
    public OptionalLong value() {
        return value;
    }

    public List<Holder> holders() {
        return holders;
    }

    /** Waiters of a fair lock, in queue order. */
    public List<Waiter> waiters() {
        return waiters;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof LockInfo)) {
            return false;
        }
        LockInfo l = (LockInfo) o;
        return key.equals(l.key) && db == l.db && kind.equals(l.kind) && mode.equals(l.mode)
                && leaseMs.equals(l.leaseMs) && value.equals(l.value) && holders.equals(l.holders)
                && waiters.equals(l.waiters);
    }

    @Override
    public int hashCode() {
        return Objects.hash(key, db, kind, mode, leaseMs, value, holders, waiters);
    }

    @Override
    public String toString() {
        return "LockInfo[db" + db + " " + key + " " + kind + mode.map(m -> " mode=" + m).orElse("")
                + (value.isPresent() ? " value=" + value.getAsLong() : "")
                + (leaseMs.isPresent() ? ", lease " + leaseMs.getAsLong() + " ms" : ", no lease")
                + ", holders " + holders + ", waiters " + waiters + "]";
    }

    /** One holder: a Redisson {@code uuid:threadId}, a token, a semaphore member. */
    public static final class Holder {
        private final String id;
        private final long count;
        private final OptionalLong leaseMs;
        private final OptionalDouble score;

        Holder(String id, long count, OptionalLong leaseMs, OptionalDouble score) {
            this.id = id;
            this.count = count;
            this.leaseMs = leaseMs;
            this.score = score;
        }

        public String id() {
            return id;
        }

        /** Re-entries (1 for non-reentrant locks). */
        public long count() {
            return count;
        }

        /** This hold's remaining lease in ms, when known. */
        public OptionalLong leaseMs() {
            return leaseMs;
        }

        /** A sorted-set holder's score (acquisition time or deadline, unix ms). */
        public OptionalDouble score() {
            return score;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Holder)) {
                return false;
            }
            Holder h = (Holder) o;
            return id.equals(h.id) && count == h.count && leaseMs.equals(h.leaseMs) && score.equals(h.score);
        }

        @Override
        public int hashCode() {
            return Objects.hash(id, count, leaseMs, score);
        }

        @Override
        public String toString() {
            return "Holder[" + id + " x" + count + leaseMs.stream().mapToObj(ms -> ", lease " + ms + " ms")
                    .findFirst().orElse("") + "]";
        }
    }

    /** One waiter of a fair lock. */
    public static final class Waiter {
        private final String id;
        private final OptionalLong deadlineMs;

        Waiter(String id, OptionalLong deadlineMs) {
            this.id = id;
            this.deadlineMs = deadlineMs;
        }

        public String id() {
            return id;
        }

        /** By when it must retry (unix ms), if the lock records it. */
        public OptionalLong deadlineMs() {
            return deadlineMs;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Waiter && id.equals(((Waiter) o).id) && deadlineMs.equals(((Waiter) o).deadlineMs);
        }

        @Override
        public int hashCode() {
            return Objects.hash(id, deadlineMs);
        }

        @Override
        public String toString() {
            return "Waiter[" + id + deadlineMs.stream().mapToObj(d -> ", until " + d).findFirst().orElse("") + "]";
        }
    }
}
