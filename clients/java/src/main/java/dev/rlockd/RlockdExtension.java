package dev.rlockd;

import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * JUnit 5 extension that runs an rlockd server for a test class or for each test.
 *
 * <pre>{@code
 * @ExtendWith(RlockdExtension.class)          // one server for the class
 * class LockTest {
 *     @Test void lock(RlockdServer srv) { ... }   // or (@RlockdUrl String url)
 * }
 *
 * class OtherTest {
 *     @RegisterExtension
 *     static RlockdExtension rlockd = RlockdExtension.perTest();   // a fresh server per test
 *     @Test void lock() { rlockd.server().url(); }
 * }
 * }</pre>
 *
 * <p>Parameters of type {@link RlockdServer}, and {@code String} parameters annotated
 * {@link RlockdUrl}, are injected. A parameter of type {@link RlockdCluster} (3 primaries) or
 * {@link RlockdReplicated} (a primary, one replica, three Sentinels) gets a fresh topology
 * for that test (for the class, as a {@code @BeforeAll} parameter), closed after it. When a test fails, the server's log is attached to
 * the failure as a suppressed exception, and the server's lock timeline ({@code RLOCKD TIMELINE}) is
 * written under {@code target/rlockd/} (system property {@code rlockd.artifacts}) with its path
 * published as the report entry {@code rlockd-timeline}; passing tests write nothing. With
 * {@code -Drlockd.record=true} the server records every command of each test ({@code RLOCKD RECORD
 * START} before it), and a failed test's recording is saved beside its timeline (report entry
 * {@code rlockd-recording}), for {@code rlockd replay}.
 *
 * <p>Each registered instance has its own server: two {@code perTest()} fields in one
 * class give each test two servers, reached through each field's {@link #server()}
 * (a {@code RlockdServer} parameter is then ambiguous, and JUnit says so).
 */
public class RlockdExtension
        implements BeforeAllCallback, BeforeEachCallback, AfterEachCallback, ParameterResolver,
                TestExecutionExceptionHandler {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(RlockdExtension.class);

    /** This instance's entry in the store: two extensions in one class keep two servers. */
    private final Object key = new Object();

    private final boolean perTest;
    private final Supplier<RlockdServer> factory;
    private final ThreadLocal<RlockdServer> current = new ThreadLocal<>();
    private volatile RlockdServer last;

    /** One server per test class (what {@code @ExtendWith(RlockdExtension.class)} gives). */
    public RlockdExtension() {
        this(false, RlockdServer::start);
    }

    private RlockdExtension(boolean perTest, Supplier<RlockdServer> factory) {
        this.perTest = perTest;
        this.factory = factory;
    }

    /** One server for the whole class. */
    public static RlockdExtension perClass() {
        return new RlockdExtension(false, RlockdServer::start);
    }

    /** A fresh server for every test method. */
    public static RlockdExtension perTest() {
        return new RlockdExtension(true, RlockdServer::start);
    }

    /** Servers made from this builder's options (password, arguments, binary …). */
    public static RlockdExtension perClass(RlockdServer.Builder builder) {
        return new RlockdExtension(false, builder::start);
    }

    public static RlockdExtension perTest(RlockdServer.Builder builder) {
        return new RlockdExtension(true, builder::start);
    }

    /** The server of the running test (for {@code @RegisterExtension} fields). */
    public RlockdServer server() {
        RlockdServer s = current.get();
        if (s == null) {
            s = last;
        }
        if (s == null) {
            throw new IllegalStateException("no rlockd server: call server() from a test or a @BeforeEach method");
        }
        return s;
    }

    /** Wraps the server so that JUnit closes it when the owning context ends. */
    private static final class Holder implements ExtensionContext.Store.CloseableResource {
        final RlockdServer server;

        Holder(RlockdServer server) {
            this.server = server;
        }

        @Override
        public void close() {
            server.close();
        }
    }

    /** A topology a parameter asked for, closed with its context. */
    private static final class TopologyHolder implements ExtensionContext.Store.CloseableResource {
        final AutoCloseable topology;
        final String name;
        final Supplier<String> logs;

        TopologyHolder(AutoCloseable topology, String name, Supplier<String> logs) {
            this.topology = topology;
            this.name = name;
            this.logs = logs;
        }

        @Override
        public void close() throws Exception {
            topology.close();
        }
    }

    private static final List<Class<?>> TOPOLOGIES = List.of(RlockdCluster.class, RlockdReplicated.class);

    private Object topologyFor(ExtensionContext ctx, Class<?> type) {
        TopologyHolder h = ctx.getStore(NS).getOrComputeIfAbsent(List.of(key, type), k -> {
            if (type == RlockdCluster.class) {
                RlockdCluster c = RlockdCluster.start(3);
                return new TopologyHolder(c, c.toString(), c::logs);
            }
            RlockdReplicated r = RlockdReplicated.start(1, 3);
            return new TopologyHolder(r, r.toString(), r::logs);
        }, TopologyHolder.class);
        return h.topology;
    }

    private RlockdServer serverFor(ExtensionContext ctx) {
        ExtensionContext owner = perTest ? ctx : classContext(ctx);
        Holder h = owner.getStore(NS).getOrComputeIfAbsent(key, k -> new Holder(factory.get()), Holder.class);
        return h.server;
    }

    private static ExtensionContext classContext(ExtensionContext ctx) {
        ExtensionContext c = ctx;
        while (c.getTestMethod().isPresent() && c.getParent().isPresent()) {
            c = c.getParent().get();
        }
        return c;
    }

    @Override
    public void beforeAll(ExtensionContext ctx) {
        if (!perTest) {
            last = serverFor(ctx);
        }
    }

    @Override
    public void beforeEach(ExtensionContext ctx) {
        RlockdServer s = serverFor(ctx);
        current.set(s);
        last = s;
        if (Boolean.getBoolean("rlockd.record")) {
            s.command("RLOCKD", "RECORD", "START");
        }
    }

    @Override
    public void afterEach(ExtensionContext ctx) {
        current.remove();
    }

    @Override
    public boolean supportsParameter(ParameterContext pc, ExtensionContext ec) {
        Class<?> type = pc.getParameter().getType();
        return type == RlockdServer.class || (type == String.class && pc.isAnnotated(RlockdUrl.class))
                || TOPOLOGIES.contains(type);
    }

    @Override
    public Object resolveParameter(ParameterContext pc, ExtensionContext ec) {
        Class<?> type = pc.getParameter().getType();
        if (TOPOLOGIES.contains(type)) {
            return topologyFor(ec, type);
        }
        RlockdServer s = serverFor(ec);
        if (type == RlockdServer.class) {
            return s;
        }
        if (type == String.class) {
            return s.url();
        }
        throw new ParameterResolutionException("unsupported parameter " + pc.getParameter());
    }

    @Override
    public void handleTestExecutionException(ExtensionContext ctx, Throwable failure) throws Throwable {
        ExtensionContext owner = perTest ? ctx : classContext(ctx);
        Holder h = owner.getStore(NS).get(key, Holder.class);
        if (h != null) {
            failure.addSuppressed(new ServerLog(h.server));
            // The recording first: it then ends with the test's own commands.
            saveRecording(ctx, h.server);
            writeTimeline(ctx, h.server);
        }
        for (Class<?> type : TOPOLOGIES) {
            for (ExtensionContext c = ctx; c != null; c = c.getParent().orElse(null)) {
                TopologyHolder t = c.getStore(NS).get(List.of(key, type), TopologyHolder.class);
                if (t != null) {
                    failure.addSuppressed(new ServerLog(t.name, t.logs.get()));
                    break;
                }
            }
        }
        throw failure;
    }

    /**
     * Writes the failed test's timeline under {@code target/rlockd/} (the system property
     * {@code rlockd.artifacts} names another directory) and publishes its path as the report
     * entry {@code rlockd-timeline}. A server that cannot answer is skipped (its log says why).
     */
    private static void writeTimeline(ExtensionContext ctx, RlockdServer server) {
        try {
            java.nio.file.Path dir = java.nio.file.Path.of(System.getProperty("rlockd.artifacts", "target/rlockd"));
            java.nio.file.Files.createDirectories(dir);
            String name = (ctx.getRequiredTestClass().getSimpleName() + "-" + ctx.getDisplayName())
                    .replaceAll("[^A-Za-z0-9_.-]+", "_");
            java.nio.file.Path file = dir.resolve(name + "-" + server.port() + "-timeline.html").toAbsolutePath();
            server.timeline(file);
            ctx.publishReportEntry("rlockd-timeline", file.toString());
        } catch (RuntimeException | java.io.IOException e) {
            // nothing to attach
        }
    }

    /**
     * With {@code -Drlockd.record=true}, saves the failed test's recording beside its timeline and
     * publishes its path as the report entry {@code rlockd-recording}.
     */
    private static void saveRecording(ExtensionContext ctx, RlockdServer server) {
        if (!Boolean.getBoolean("rlockd.record")) {
            return;
        }
        try {
            java.nio.file.Path dir = java.nio.file.Path.of(System.getProperty("rlockd.artifacts", "target/rlockd"));
            java.nio.file.Files.createDirectories(dir);
            String name = (ctx.getRequiredTestClass().getSimpleName() + "-" + ctx.getDisplayName())
                    .replaceAll("[^A-Za-z0-9_.-]+", "_");
            java.nio.file.Path file = dir.resolve(name + "-" + server.port() + "-recording.jsonl").toAbsolutePath();
            server.command("RLOCKD", "RECORD", "SAVE", file.toString());
            ctx.publishReportEntry("rlockd-recording", file.toString());
        } catch (RuntimeException | java.io.IOException e) {
            // nothing to attach
        }
    }

    /** Carries the server's log into a failing test's report. */
    public static final class ServerLog extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ServerLog(RlockdServer s) {
            this("port " + s.port(), s.logs());
        }

        ServerLog(String what, String logs) {
            super("rlockd log (" + what + "):\n" + logs, null, false, false);
        }
    }
}
