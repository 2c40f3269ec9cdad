package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

class ExtensionTest {

    @Nested
    @ExtendWith(RlockdExtension.class)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    class PerClassByAnnotation {
        @Test
        @Order(1)
        void injectsTheServer(RlockdServer srv) {
            assertTrue(srv.ping());
            srv.command("SET", "kept", "1");
        }

        @Test
        @Order(2)
        void sameServerForTheClass(RlockdServer srv, @RlockdUrl String url) {
            assertEquals(srv.url(), url);
            assertEquals(1L, srv.command("EXISTS", "kept"));
        }
    }

    @Nested
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    class PerTestByField {
        @RegisterExtension
        final RlockdExtension rlockd = RlockdExtension.perTest();

        final List<Integer> ports = SEEN;

        @Test
        @Order(1)
        void first() {
            ports.add(rlockd.server().port());
            rlockd.server().command("SET", "k", "v");
        }

        @Test
        @Order(2)
        void second(RlockdServer srv) {
            assertEquals(rlockd.server(), srv);
            assertEquals(0L, srv.command("EXISTS", "k"), "a fresh server per test");
            assertEquals(1, SEEN.size());
        }
    }

    static final List<Integer> SEEN = new ArrayList<>();

    /** Run through the test kit only (not picked up by Surefire: a nested class without @Nested). */
    @ExtendWith(RlockdExtension.class)
    static class FailingExample {
        @Test
        void fails(RlockdServer srv) {
            srv.command("SET", "k", "v");
            throw new AssertionError("on purpose");
        }
    }

    @Test
    void aFailingTestCarriesTheServerLog() {
        Events failed = EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(FailingExample.class))
                .execute()
                .testEvents()
                .failed();
        assertEquals(1, failed.count());
        Throwable t = failed.list().get(0).getPayload(org.junit.platform.engine.TestExecutionResult.class)
                .flatMap(org.junit.platform.engine.TestExecutionResult::getThrowable)
                .orElseThrow();
        assertEquals("on purpose", t.getMessage());
        assertFalse(t.getSuppressed().length == 0, "server log attached");
        String log = Arrays.stream(t.getSuppressed()).map(Throwable::getMessage).reduce("", String::concat);
        assertTrue(log.contains("rlockd log (port "), log);
        assertTrue(log.contains("ready to accept connections"), log);
    }
}
