package dev.rlockd;

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
 * {@link RlockdUrl}, are injected. When a test fails, the server's log is attached to
 * the failure as a suppressed exception.
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
    }

    @Override
    public void afterEach(ExtensionContext ctx) {
        current.remove();
    }

    @Override
    public boolean supportsParameter(ParameterContext pc, ExtensionContext ec) {
        Class<?> type = pc.getParameter().getType();
        return type == RlockdServer.class || (type == String.class && pc.isAnnotated(RlockdUrl.class));
    }

    @Override
    public Object resolveParameter(ParameterContext pc, ExtensionContext ec) {
        RlockdServer s = serverFor(ec);
        Class<?> type = pc.getParameter().getType();
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
        }
        throw failure;
    }

    /** Carries the server's log into a failing test's report. */
    public static final class ServerLog extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ServerLog(RlockdServer s) {
            super("rlockd log (port " + s.port() + "):\n" + s.logs(), null, false, false);
        }
    }
}
