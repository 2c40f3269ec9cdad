package dev.rlockd;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One rlockd process on 127.0.0.1.
 *
 * <pre>{@code
 * try (RlockdServer srv = RlockdServer.start()) {
 *     config.useSingleServer().setAddress(srv.url());
 * }
 * }</pre>
 *
 * <p>The test control ({@code RLOCKD ...}) is there as methods: {@link #advanceClock(long)},
 * {@link #locks()}, {@link #lockEvents()}, {@link #assertLocksSafe()}, {@link #snapshot(String)},
 * {@link #addFault(Fault)}...
 *
 * <p>The server is stopped by {@link #close()}, by a JVM shutdown hook, and by
 * the server itself when this JVM dies (even by SIGKILL): its standard input is
 * a pipe from this JVM and end of file makes it exit.
 */
public final class RlockdServer implements AutoCloseable {
    private static final Pattern READY = Pattern.compile("ready to accept connections.*\\(port (\\d+)\\)");
    private static final Set<RlockdServer> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (RlockdServer s : LIVE) {
                s.process.destroyForcibly();
            }
        }, "rlockd-shutdown"));
    }

    private final Process process;
    private final String host;
    private final String password;
    private final int port;
    private final StringBuffer log;
    /** The ready lines' ports: every node of the process, then its Sentinels. */
    final List<Integer> nodePorts;
    final List<Integer> sentinelPorts;

    private RlockdServer(Process process, String host, String password, int port, StringBuffer log,
            List<Integer> nodePorts, List<Integer> sentinelPorts) {
        this.process = process;
        this.host = host;
        this.password = password;
        this.port = port;
        this.log = log;
        this.nodePorts = nodePorts;
        this.sentinelPorts = sentinelPorts;
    }

    /** The Sentinel of the same process listening on {@code port} (no password). */
    RlockdServer sentinel(int port) {
        return new RlockdServer(process, host, null, port, log, nodePorts, sentinelPorts);
    }

    /** The node of the same process listening on {@code port}. */
    RlockdServer node(int port) {
        return new RlockdServer(process, host, password, port, log, nodePorts, sentinelPorts);
    }

    /** Starts a server on a free port with the default options. */
    public static RlockdServer start() {
        return builder().start();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Options of a server: port, password, extra arguments, binary, start-up timeout. */
    public static final class Builder {
        private int port;
        private String host = "127.0.0.1";
        private String password;
        private final List<String> args = new ArrayList<>();
        private Path binary;
        private long startupTimeoutMillis = 10_000;
        private int clusterReplicas;

        /** TCP port; 0 (the default) lets the server pick a free one. */
        public Builder port(int port) {
            this.port = check("port", port, port >= 0 && port <= 65535, "a port from 0 to 65535");
            return this;
        }

        public Builder host(String host) {
            this.host = check("host", host, host != null && !host.isEmpty(), "an address");
            return this;
        }

        /** Sets {@code requirepass}; {@link RlockdServer#url()} then carries it. */
        public Builder password(String password) {
            this.password = password;
            return this;
        }

        /** Extra command-line options, e.g. {@code arg("--notify-keyspace-events", "KEA")}. */
        public Builder arg(String... more) {
            for (String a : more) {
                check("arg", a, a != null, "strings");
            }
            Collections.addAll(args, more);
            return this;
        }

        /** The executable to run (default: {@link NativeBinary#path()}). */
        public Builder binary(Path binary) {
            this.binary = binary;
            return this;
        }

        public Builder startupTimeout(long millis) {
            this.startupTimeoutMillis = check("startupTimeout", millis, millis > 0, "a positive number of milliseconds");
            return this;
        }

        /** Replicas per primary for {@link #startCluster} ({@code --cluster-replicas}; where the binary supports it). */
        public Builder clusterReplicas(int replicas) {
            this.clusterReplicas = check("clusterReplicas", replicas, replicas >= 0, "a count");
            return this;
        }

        /** The builder's options, named in its errors. */
        static final String OPTIONS = "port, host, password, arg, binary, startupTimeout, clusterReplicas";

        private static <T> T check(String option, T value, boolean ok, String takes) {
            if (!ok) {
                throw new IllegalArgumentException(
                        "RlockdServer.builder()." + option + " takes " + takes + ", not " + value + " (options: " + OPTIONS + ")");
            }
            return value;
        }

        public RlockdServer start() {
            return start(List.of(), 1, 0);
        }

        /**
         * Starts a Redis Cluster of {@code primaries} nodes in one process with these options
         * ({@code rlockd --cluster N}).
         */
        public RlockdCluster startCluster(int primaries) {
            check("startCluster", primaries, primaries >= 1, "a count of at least 1");
            List<String> topo = new ArrayList<>(List.of("--cluster", Integer.toString(primaries)));
            if (clusterReplicas > 0) {
                Collections.addAll(topo, "--cluster-replicas", Integer.toString(clusterReplicas));
            }
            return new RlockdCluster(start(topo, primaries * (1 + clusterReplicas), 0));
        }

        /**
         * Starts a primary with {@code replicas} replicas and {@code sentinels} Sentinels
         * watching it as "mymaster", in one process, with these options
         * ({@code rlockd --replicas N --sentinel 0,0,0}).
         */
        public RlockdReplicated startReplicated(int replicas, int sentinels) {
            check("startReplicated", replicas, replicas >= 0, "counts of replicas and Sentinels");
            check("startReplicated", sentinels, sentinels >= 0, "counts of replicas and Sentinels");
            List<String> topo = new ArrayList<>(List.of("--replicas", Integer.toString(replicas)));
            if (sentinels > 0) {
                Collections.addAll(topo, "--sentinel", String.join(",", Collections.nCopies(sentinels, "0")));
            }
            return new RlockdReplicated(start(topo, 1 + replicas, sentinels));
        }

        private RlockdServer start(List<String> topology, int nodes, int sentinels) {
            NativeBinary.checkProperties();
            Path exe = binary != null ? NativeBinary.checked(binary, "the builder's binary()") : NativeBinary.path();
            List<String> cmd = new ArrayList<>();
            Collections.addAll(cmd, exe.toString(), "--port", Integer.toString(port), "--bind", host);
            if (password != null) {
                Collections.addAll(cmd, "--requirepass", password);
            }
            cmd.addAll(topology);
            cmd.addAll(args);
            ProcessBuilder pb = new ProcessBuilder(cmd);
            Map<String, String> env = pb.environment();
            env.put("RLOCKD_STDIN_WATCHDOG", "1");
            env.put("NO_COLOR", "1");
            Process p;
            try {
                p = pb.start();
            } catch (IOException e) {
                throw new RlockdException("cannot run " + exe + ": " + e.getMessage(), null, e);
            }
            StringBuffer log = new StringBuffer();
            List<Integer> nodePorts = new CopyOnWriteArrayList<>();
            List<Integer> sentinelPorts = new CopyOnWriteArrayList<>();
            CountDownLatch ready = new CountDownLatch(1);
            Thread out = pump(p.getInputStream(), log, line -> {
                Matcher m = READY.matcher(line);
                if (ready.getCount() != 0 && m.find()) {
                    (line.contains("sentinel") ? sentinelPorts : nodePorts).add(Integer.parseInt(m.group(1)));
                    if (nodePorts.size() >= nodes && sentinelPorts.size() >= sentinels) {
                        ready.countDown();
                    }
                }
            });
            Thread err = pump(p.getErrorStream(), log, line -> { });
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(startupTimeoutMillis);
            try {
                while (!ready.await(5, TimeUnit.MILLISECONDS)) {
                    if (!p.isAlive() || System.nanoTime() > deadline) {
                        break;
                    }
                }
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
                throw new RlockdException("interrupted while starting rlockd");
            }
            if (ready.getCount() != 0) {
                boolean exited = !p.isAlive();
                p.destroyForcibly();
                try {
                    p.waitFor(5, TimeUnit.SECONDS);
                    // The process is gone, so its pipes end and the readers
                    // return at once; the bound only matters on a machine so
                    // loaded that a reader has not run yet (seen with 1 s).
                    out.join(10_000);
                    err.join(10_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                String text = log.toString();
                if (text.toLowerCase().contains("in use")) {
                    throw new RlockdException("rlockd could not listen on " + host + ":" + port
                            + ": the port is already in use", text, null);
                }
                String why = exited ? "exited with code " + p.exitValue()
                        : "printed no ready line within " + startupTimeoutMillis + " ms";
                throw new RlockdException("rlockd " + why + " (" + String.join(" ", cmd) + ")", text, null);
            }
            RlockdServer srv = new RlockdServer(p, host, password, nodePorts.get(0), log,
                    List.copyOf(nodePorts), List.copyOf(sentinelPorts));
            LIVE.add(srv);
            return srv;
        }
    }

    private interface LineSink {
        void line(String line);
    }

    private static Thread pump(InputStream in, StringBuffer log, LineSink sink) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    log.append(line).append('\n');
                    sink.line(line);
                }
            } catch (IOException ignored) {
                // the process is gone
            }
        }, "rlockd-log");
        t.setDaemon(true);
        t.start();
        return t;
    }

    public int port() {
        return port;
    }

    public String host() {
        return host;
    }

    /** The {@code requirepass} the server was started with, or null. */
    public String password() {
        return password;
    }

    /** {@code redis://[:password@]127.0.0.1:PORT}, as Redisson's {@code setAddress} and Lettuce take it. */
    public String url() {
        return "redis://" + (password != null ? ":" + password + "@" : "") + host + ":" + port;
    }

    public long pid() {
        return process.pid();
    }

    public boolean isRunning() {
        return process.isAlive();
    }

    /** Everything the server printed so far (stdout and stderr). */
    public String logs() {
        return log.toString();
    }

    /**
     * Sends one command on a new connection and returns the reply decoded from RESP2:
     * a status as String, a bulk string as <b>byte[]</b> (so {@code command("GET", k)} is a
     * {@code byte[]}; {@link #commandString} gives text), an integer as Long, an array as
     * List, a nil as null; an error reply throws {@link RlockdException}.
     */
    public Object command(String... args) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 5000);
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            Resp.Reader in = new Resp.Reader(s.getInputStream());
            if (password != null) {
                out.write(Resp.encode("AUTH", password));
                in.read();
            }
            out.write(Resp.encode(args));
            out.flush();
            return in.read();
        } catch (IOException e) {
            throw new RlockdException("command failed: " + e.getMessage(), null, e);
        }
    }

    /**
     * Like {@link #command}, with the reply as text: a bulk string decoded as UTF-8, a status
     * as it is, an integer in decimal, a nil as null ({@code commandString("GET", "k")} is
     * {@code "v"}). An array reply throws {@link RlockdException}: use {@link #command} for those.
     */
    public String commandString(String... args) {
        Object r = command(args);
        if (r == null || r instanceof String) {
            return (String) r;
        }
        if (r instanceof byte[]) {
            return new String((byte[]) r, StandardCharsets.UTF_8);
        }
        if (r instanceof Long) {
            return Long.toString((Long) r);
        }
        throw new RlockdException(String.join(" ", args) + " replied with an array; use command() for it");
    }

    public boolean ping() {
        return "PONG".equals(command("PING"));
    }

    // ------------------------------------------------------------ test control
    // The RLOCKD commands as methods, through command(); an error reply throws RlockdException.

    private Object rlockd(String... args) {
        String[] all = new String[args.length + 1];
        all[0] = "RLOCKD";
        System.arraycopy(args, 0, all, 1, args.length);
        return command(all);
    }

    /** The server's time, unix ms. */
    public long clockMs() {
        return Control.integer(rlockd("CLOCK", "GET"));
    }

    /** The server's time, its offset from the system clock, frozen or not. */
    public ClockInfo clockInfo() {
        Map<String, Object> m = Control.map(rlockd("CLOCK", "INFO"));
        return new ClockInfo(Control.integer(m.get("now_ms")), Control.integer(m.get("offset_ms")),
                Control.integer(m.get("frozen")) != 0);
    }

    /**
     * Moves the server's time by {@code ms} (negative: back). Keys now due expire before this
     * returns, with their {@code expired} events. Returns the new time.
     */
    public long advanceClock(long ms) {
        return Control.integer(rlockd("CLOCK", "ADVANCE", Long.toString(ms)));
    }

    /** {@link #advanceClock(long)} by a duration. */
    public long advanceClock(Duration by) {
        return advanceClock(by.toMillis());
    }

    /** Jumps to {@code unixMs} (back or forth). Returns the new time. */
    public long setClock(long unixMs) {
        return Control.integer(rlockd("CLOCK", "SET", Long.toString(unixMs)));
    }

    /** Stops the server's time (TTLs, TIME, blocking timeouts, scripts). */
    public void freezeClock() {
        rlockd("CLOCK", "FREEZE");
    }

    /** Lets the server's time run again as if it had never stopped (moves made while frozen stay; the time spent frozen is caught up). */
    public void resumeClock() {
        rlockd("CLOCK", "RESUME");
    }

    /** Runs {@code ms} ahead of (negative: behind) the system clock. Returns the new time. */
    public long skewClock(long ms) {
        return Control.integer(rlockd("CLOCK", "SKEW", Long.toString(ms)));
    }

    /** Every lock in the keyspace. */
    public List<LockInfo> locks() {
        return lockList(rlockd("LOCKS"));
    }

    /** The locks whose keys match the glob {@code pattern}. */
    public List<LockInfo> locks(String pattern) {
        return lockList(rlockd("LOCKS", pattern));
    }

    private static List<LockInfo> lockList(Object reply) {
        List<LockInfo> out = new ArrayList<>();
        for (Object o : Control.list(reply)) {
            out.add(Control.lock(o));
        }
        return out;
    }

    /** The locks, readable: one line per lock, holder and waiter. */
    public String locksText() {
        return Control.text(rlockd("LOCKS", "TEXT"));
    }

    /** What happened to every lock: acquired, reentered, renewed, released, expired. */
    public List<LockEvent> lockEvents() {
        return eventList(rlockd("EVENTS"));
    }

    /** What happened to the lock {@code key}. */
    public List<LockEvent> lockEvents(String key) {
        return eventList(rlockd("EVENTS", key));
    }

    /** What happened to the lock {@code key} (every lock if null) after event id {@code since}. */
    public List<LockEvent> lockEvents(String key, long since) {
        List<String> args = new ArrayList<>(List.of("EVENTS"));
        if (key != null) {
            args.add(key);
        }
        Collections.addAll(args, "SINCE", Long.toString(since));
        return eventList(rlockd(args.toArray(new String[0])));
    }

    private static List<LockEvent> eventList(Object reply) {
        List<LockEvent> out = new ArrayList<>();
        for (Object o : Control.list(reply)) {
            out.add(Control.event(o));
        }
        return out;
    }

    /** Every lock safety violation the server saw (empty: nothing was unsafe). */
    public List<String> checkLocks() {
        return Control.texts(rlockd("CHECK"));
    }

    /** Forgets the lock events and violations seen so far. */
    public void resetLockChecks() {
        rlockd("CHECK", "RESET");
    }

    /** Throws {@link LocksUnsafeError} (an {@link AssertionError}) listing the violations, if any. */
    public void assertLocksSafe() {
        List<String> violations = checkLocks();
        if (!violations.isEmpty()) {
            throw new LocksUnsafeError(violations);
        }
    }

    /**
     * The lock history as one self-contained HTML document ({@code RLOCKD TIMELINE}): a lane per
     * lock, holders as bars, claims, faults, clock moves, failovers and violations.
     */
    public String timeline() {
        return Control.text(rlockd("TIMELINE"));
    }

    /** The timeline, also written to {@code file}; returns the document. */
    public String timeline(Path file) {
        String doc = timeline();
        try {
            java.nio.file.Files.writeString(file, doc);
        } catch (IOException e) {
            throw new RlockdException("writing the timeline to " + file + ": " + e.getMessage());
        }
        return doc;
    }

    /** The timeline's data as JSON ({@code FORMAT json}), of the locks whose keys match {@code keyPattern} (all if null). */
    public String timelineJson(String keyPattern) {
        return keyPattern == null
                ? Control.text(rlockd("TIMELINE", "FORMAT", "json"))
                : Control.text(rlockd("TIMELINE", "FORMAT", "json", "KEY", keyPattern));
    }

    /**
     * {@code RLOCKD HISTORY}: the lock history as Jepsen-style operations (index, time, type,
     * process, f, value), a JSON array, of the locks whose keys match {@code keyPattern} (all if
     * null). The Go module's Porcupine check reads it.
     */
    public String history(String keyPattern) {
        return keyPattern == null
                ? Control.text(rlockd("HISTORY"))
                : Control.text(rlockd("HISTORY", "KEY", keyPattern));
    }

    /** The history, also written to {@code file}; returns it. */
    public String history(Path file, String keyPattern) {
        String doc = history(keyPattern);
        try {
            java.nio.file.Files.writeString(file, doc);
        } catch (IOException e) {
            throw new RlockdException("writing the history to " + file + ": " + e.getMessage());
        }
        return doc;
    }

    /** {@code RLOCKD CLAIM ENTER}: the application's code is inside the critical section of {@code lock} as {@code holder}. */
    public void claimEnter(String lock, String holder) {
        rlockd("CLAIM", "ENTER", lock, holder);
    }

    /** {@code RLOCKD CLAIM LEAVE}: it left it. */
    public void claimLeave(String lock, String holder) {
        rlockd("CLAIM", "LEAVE", lock, holder);
    }

    /**
     * A claimed critical section for try-with-resources: {@code try (var c = srv.claim("orders",
     * holder)) { ... }}. {@code holder} is the lock's holder as its script writes it (Redisson:
     * {@code <connection manager id>:<thread id>}); {@link #checkLocks()} then flags a section that
     * overlapped another holder's grant or outlived its own lease.
     */
    public Claim claim(String lock, String holder) {
        claimEnter(lock, holder);
        return () -> claimLeave(lock, holder);
    }

    /** A claimed critical section; {@link #close()} leaves it. */
    @FunctionalInterface
    public interface Claim extends AutoCloseable {
        @Override
        void close();
    }

    /** Captures every database, TTLs included, under {@code name}. */
    public void snapshot(String name) {
        rlockd("SNAPSHOT", name);
    }

    /** Replaces every database with snapshot {@code name} (as after a failover). */
    public void restore(String name) {
        rlockd("RESTORE", name);
    }

    /** The snapshot names. */
    public List<String> snapshots() {
        return Control.texts(rlockd("SNAPSHOTS"));
    }

    /** Sets a fault; returns its id. {@code srv.addFault(Fault.latency(200).client("worker-*").times(3))} */
    public long addFault(Fault fault) {
        List<String> args = new ArrayList<>(List.of("FAULT"));
        args.addAll(fault.args());
        return Control.integer(rlockd(args.toArray(new String[0])));
    }

    /** The faults set, with how often each applied. */
    public List<FaultInfo> faults() {
        List<FaultInfo> out = new ArrayList<>();
        for (Object o : Control.list(rlockd("FAULT", "LIST"))) {
            out.add(Control.fault(o));
        }
        return out;
    }

    /** Removes every fault; returns how many went. */
    public long clearFaults() {
        return Control.integer(rlockd("FAULT", "CLEAR"));
    }

    /** Removes fault {@code id}; returns 1, or 0 if it was gone. */
    public long clearFault(long id) {
        return Control.integer(rlockd("FAULT", "CLEAR", Long.toString(id)));
    }

    /** Closes the connections whose client name matches {@code namePattern} now; returns how many. */
    public long killClients(String namePattern) {
        return Control.integer(rlockd("FAULT", "KILL", "CLIENT", namePattern));
    }

    /** Closes the connection with client id {@code id} now; returns 1, or 0 if there is none. */
    public long killClient(long id) {
        return Control.integer(rlockd("FAULT", "KILL", "ID", Long.toString(id)));
    }

    /**
     * Stops the server (SIGTERM, then SIGKILL after 5 s). Safe to call twice. For a node of a
     * topology, stops the whole process: every node and Sentinel.
     */
    @Override
    public void close() {
        LIVE.remove(this);
        if (process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        try {
            process.getOutputStream().close();
        } catch (IOException ignored) {
            // already closed
        }
    }

    @Override
    public String toString() {
        return "RlockdServer[" + url() + (isRunning() ? "" : ", stopped") + "]";
    }
}
