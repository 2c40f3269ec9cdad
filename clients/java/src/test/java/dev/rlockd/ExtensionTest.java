package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
    /** The first node of each topology TopologyParameters saw, in test order. */
    static final List<RlockdServer> seen = new ArrayList<>();

    @Test
    void aFailingTestLeavesItsRecordingWhenRecording() throws Exception {
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("rlockd-artifacts");
        System.setProperty("rlockd.artifacts", dir.toString());
        System.setProperty("rlockd.record", "true");
        try {
            Events all = EngineTestKit.engine("junit-jupiter").selectors(selectClass(FailingExample.class)).execute()
                    .testEvents();
            String entry = all.reportingEntryPublished().stream()
                    .map(e -> e.getPayload(org.junit.platform.engine.reporting.ReportEntry.class).orElseThrow())
                    .map(r -> r.getKeyValuePairs().get("rlockd-recording"))
                    .filter(java.util.Objects::nonNull)
                    .findFirst()
                    .orElseThrow();
            java.util.List<String> lines = java.nio.file.Files.readAllLines(java.nio.file.Path.of(entry));
            assertTrue(lines.get(0).startsWith("{\"t\":\"rlockd-record\""), lines.get(0));
            assertTrue(lines.stream().anyMatch(l -> l.contains("\"args\":[\"SET\",\"k\",\"v\"]")
                    && l.contains("\"reply\":\"+OK\\r\\n\"")), lines.toString());
        } finally {
            System.clearProperty("rlockd.artifacts");
            System.clearProperty("rlockd.record");
        }
    }

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

    @Nested
    class TwoPerTestFields {
        @RegisterExtension
        final RlockdExtension a = RlockdExtension.perTest();

        @RegisterExtension
        final RlockdExtension b = RlockdExtension.perTest(RlockdServer.builder().password("pw"));

        @Test
        void eachFieldHasItsOwnServer() {
            assertNotEquals(a.server().port(), b.server().port());
            assertNotEquals(a.server().pid(), b.server().pid());
            a.server().command("SET", "only-in-a", "1");
            assertEquals("1", a.server().commandString("GET", "only-in-a"));
            assertNull(b.server().commandString("GET", "only-in-a"));
            assertEquals("pw", b.server().password());
            assertNull(a.server().password());
        }
    }

    @Test
    void commandStringGivesText() {
        try (RlockdServer srv = RlockdServer.start()) {
            assertEquals("OK", srv.commandString("SET", "k", "v\u00e9"));
            assertArrayEquals("v\u00e9".getBytes(java.nio.charset.StandardCharsets.UTF_8), (byte[]) srv.command("GET", "k"));
            assertEquals("v\u00e9", srv.commandString("GET", "k"));
            assertEquals("1", srv.commandString("EXISTS", "k"));
            assertNull(srv.commandString("GET", "missing"));
            RlockdException e = assertThrows(RlockdException.class, () -> srv.commandString("KEYS", "*"));
            assertTrue(e.getMessage().contains("use command()"), e.getMessage());
        }
    }

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

    @Test
    void aFailingTestLeavesItsTimelineAsAReportEntry() throws Exception {
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("rlockd-artifacts");
        String before = System.getProperty("rlockd.artifacts");
        System.setProperty("rlockd.artifacts", dir.toString());
        try {
            org.junit.platform.testkit.engine.EngineExecutionResults results = EngineTestKit.engine("junit-jupiter")
                    .selectors(selectClass(FailingExample.class))
                    .execute();
            Events all = results.testEvents();
            assertEquals(1, all.failed().count(), results.allEvents().list().toString());
            String entry = all.reportingEntryPublished().stream()
                    .map(e -> e.getPayload(org.junit.platform.engine.reporting.ReportEntry.class).orElseThrow())
                    .map(r -> r.getKeyValuePairs().get("rlockd-timeline"))
                    .filter(java.util.Objects::nonNull)
                    .findFirst()
                    .orElseThrow();
            java.nio.file.Path file = java.nio.file.Path.of(entry);
            assertTrue(file.startsWith(dir), entry);
            assertTrue(java.nio.file.Files.readString(file).contains("<h1>Lock timeline</h1>"), entry);
        } finally {
            if (before == null) {
                System.clearProperty("rlockd.artifacts");
            } else {
                System.setProperty("rlockd.artifacts", before);
            }
        }
    }

    @Nested
    @ExtendWith(RlockdExtension.class)
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    class TopologyParameters {

        @Test
        @Order(1)
        void injectsAClusterAndAReplicatedSet(RlockdCluster c, RlockdReplicated r) {
            assertEquals(3, c.nodes().size());
            assertEquals(0, c.slotOwner(0));
            assertEquals(1, r.replicas().size());
            assertEquals(3, r.sentinelPorts().size());
            assertEquals(r.primary().port(), r.currentPrimary().port());
            seen.add(c.node(0));
            seen.add(r.primary());
        }

        @Test
        @Order(2)
        void aFreshOnePerTestClosedAfterIt(RlockdCluster c) {
            assertEquals(2, seen.size());
            for (RlockdServer old : seen) {
                assertFalse(old.isRunning(), old + " still running");
            }
            assertNotEquals(seen.get(0).port(), c.node(0).port());
            assertTrue(c.node(0).ping());
        }
    }

    /** Run through the test kit only. */
    @ExtendWith(RlockdExtension.class)
    static class FailingClusterExample {
        @Test
        void fails(RlockdCluster c) {
            throw new AssertionError("on purpose");
        }
    }

    @Test
    void aFailingTestCarriesTheTopologyLog() {
        Events failed = EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(FailingClusterExample.class))
                .execute()
                .testEvents()
                .failed();
        assertEquals(1, failed.count());
        Throwable t = failed.list().get(0).getPayload(org.junit.platform.engine.TestExecutionResult.class)
                .flatMap(org.junit.platform.engine.TestExecutionResult::getThrowable)
                .orElseThrow();
        String log = Arrays.stream(t.getSuppressed()).map(Throwable::getMessage).reduce("", String::concat);
        assertTrue(log.contains("rlockd log (RlockdCluster[redis://"), log);
        assertTrue(log.contains("Running mode=cluster"), log);
    }
}
