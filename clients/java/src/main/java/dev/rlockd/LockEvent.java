package dev.rlockd;

import java.util.Objects;

/** Something that happened to a lock ({@link RlockdServer#lockEvents()}). */
public final class LockEvent {
    private final long id;
    private final long timeMs;
    private final int db;
    private final String key;
    private final String kind;
    private final String event;
    private final String holder;
    private final long count;
    private final long client;
    private final String command;

    LockEvent(long id, long timeMs, int db, String key, String kind, String event, String holder, long count,
            long client, String command) {
        this.id = id;
        this.timeMs = timeMs;
        this.db = db;
        this.key = key;
        this.kind = kind;
        this.event = event;
        this.holder = holder;
        this.count = count;
        this.client = client;
        this.command = command;
    }

    /** Increasing id (for {@link RlockdServer#lockEvents(String, long)}'s {@code since}). */
    public long id() {
        return id;
    }

    /** Server time, unix ms. */
    public long timeMs() {
        return timeMs;
    }

    public int db() {
        return db;
    }

    public String key() {
        return key;
    }

    /** The lock's kind, as in {@link LockInfo#kind()}. */
    public String kind() {
        return kind;
    }

    /** {@code acquired}, {@code reentered}, {@code renewed}, {@code released}, {@code expired} or {@code counter}. */
    public String event() {
        return event;
    }

    /** The holder concerned (empty for {@code counter}). */
    public String holder() {
        return holder;
    }

    /** Re-entry count after the event, or a counter's value. */
    public long count() {
        return count;
    }

    /** Id of the client behind it (0 for an expiry). */
    public long client() {
        return client;
    }

    /** The command behind it ({@code (expiry)} for an expiry). */
    public String command() {
        return command;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof LockEvent)) {
            return false;
        }
        LockEvent e = (LockEvent) o;
        return id == e.id && timeMs == e.timeMs && db == e.db && key.equals(e.key) && kind.equals(e.kind)
                && event.equals(e.event) && holder.equals(e.holder) && count == e.count && client == e.client
                && command.equals(e.command);
    }

    @Override
    public int hashCode() {
        return Objects.hash(id, timeMs, db, key, kind, event, holder, count, client, command);
    }

    @Override
    public String toString() {
        return "LockEvent[#" + id + " " + event + " db" + db + " " + key + " (" + kind + ") by " + holder + " x" + count
                + " at " + timeMs + ", client " + client + ": " + command + "]";
    }
}
