package dev.rlockd;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A fault to inject with {@link RlockdServer#addFault(Fault)}: a kind, then a scope (every
 * condition given must hold) and how many times.
 *
 * <pre>{@code
 * srv.addFault(Fault.latency(200).jitter(50).client("worker-*").times(3));
 * srv.addFault(Fault.error("LOADING Redis is loading the dataset in memory").command("evalsha"));
 * srv.addFault(Fault.dropMessages().channel("redisson_lock__channel:*"));
 * }</pre>
 *
 * <p>Command faults take {@link #command}, {@link #key}, {@link #client} and {@link #clientId};
 * message faults ({@link #dropMessages()}, {@link #delayMessages(long)}) take {@link #channel}.
 * A wrong combination is refused by the server with an {@link RlockdException}.
 */
public final class Fault {
    private final List<String> kind;
    private final List<String> scope = new ArrayList<>();
    private final boolean latency;

    private Fault(boolean latency, String... kind) {
        this.latency = latency;
        this.kind = new ArrayList<>();
        Collections.addAll(this.kind, kind);
    }

    /** Answer with this error (e.g. {@code "READONLY ..."}) instead of running the command. */
    public static Fault error(String message) {
        return new Fault(false, "ERROR", message);
    }

    /** Hold the reply back {@code ms} milliseconds. */
    public static Fault latency(long ms) {
        return new Fault(true, "LATENCY", Long.toString(ms));
    }

    /** Close the connection before the command runs: the command is lost. */
    public static Fault closeBefore() {
        return new Fault(false, "CLOSE", "BEFORE");
    }

    /** Run the command, then close the connection without answering. */
    public static Fault closeAfter() {
        return new Fault(false, "CLOSE", "AFTER");
    }

    /** Answer nothing for {@code ms} milliseconds (the server's clock runs on). */
    public static Fault freeze(long ms) {
        return new Fault(false, "FREEZE", Long.toString(ms));
    }

    /** Write replies {@code bytes} at a time, {@code ms} apart. */
    public static Fault slowWrite(long bytes, long ms) {
        return new Fault(false, "SLOWWRITE", Long.toString(bytes), Long.toString(ms));
    }

    /** Write only {@code bytes} of the reply, then close. */
    public static Fault cutWrite(long bytes) {
        return new Fault(false, "CUTWRITE", Long.toString(bytes));
    }

    /** Lose the messages published on matching channels. */
    public static Fault dropMessages() {
        return new Fault(false, "DROPMSG");
    }

    /** Deliver the messages published on matching channels {@code ms} later. */
    public static Fault delayMessages(long ms) {
        return new Fault(false, "DELAYMSG", Long.toString(ms));
    }

    /** A random extra delay up to {@code ms} (latency faults only). */
    public Fault jitter(long ms) {
        if (!latency) {
            throw new IllegalStateException("jitter goes with latency faults only");
        }
        kind.add("JITTER");
        kind.add(Long.toString(ms));
        return this;
    }

    /** Only commands whose name matches this pattern ({@code client|setname} for subcommands). */
    public Fault command(String pattern) {
        return scope("COMMAND", pattern);
    }

    /** Only commands naming a key that matches this pattern. */
    public Fault key(String pattern) {
        return scope("KEY", pattern);
    }

    /** Only clients whose name ({@code CLIENT SETNAME}, Redisson's {@code clientName}) matches. */
    public Fault client(String namePattern) {
        return scope("CLIENT", namePattern);
    }

    /** Only the client with this id ({@code CLIENT ID}). */
    public Fault clientId(long id) {
        return scope("ID", Long.toString(id));
    }

    /** Only messages on channels matching this pattern (message faults). */
    public Fault channel(String pattern) {
        return scope("CHANNEL", pattern);
    }

    /** Remove the fault after {@code n} matches (default: until cleared). */
    public Fault times(long n) {
        return scope("TIMES", Long.toString(n));
    }

    private Fault scope(String option, String value) {
        scope.add(option);
        scope.add(value);
        return this;
    }

    /** The arguments after {@code RLOCKD FAULT}. */
    List<String> args() {
        List<String> all = new ArrayList<>(kind);
        all.addAll(scope);
        return all;
    }

    @Override
    public String toString() {
        return "Fault[" + String.join(" ", args()) + "]";
    }
}
