package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The test-control methods without a client library: clock, locks and events, snapshots, faults. */
class ControlTest {
    @RegisterExtension
    final RlockdExtension rlockd = RlockdExtension.perTest();

    @Test
    void aClaimOutlivingItsLeaseIsAViolationAndTheTimelineDrawsIt(RlockdServer srv) throws Exception {
        srv.freezeClock();
        assertEquals("OK", srv.commandString("SET", "orders", "tok-a", "NX", "PX", "30000"));
        try (RlockdServer.Claim c = srv.claim("orders", "tok-a")) {
            srv.advanceClock(31_000); // paused past its lease
            assertEquals("OK", srv.commandString("SET", "orders", "tok-b", "NX", "PX", "30000"));
        }
        String violations = String.join("\n", srv.checkLocks());
        assertTrue(violations.contains("outlived its lease"), violations);
        assertTrue(violations.contains("overlaps a grant to tok-b"), violations);
        java.nio.file.Path file = java.nio.file.Files.createTempFile("timeline", ".html");
        String html = srv.timeline(file);
        assertEquals(html, java.nio.file.Files.readString(file));
        assertTrue(html.contains("class=\"lane\" data-lock=\"orders\""), html);
        assertTrue(html.contains("<rect class=\"claim\""), html);
        assertTrue(srv.timelineJson("ord*").contains("\"end\":\"expired\""));
        assertThrows(RlockdException.class, () -> srv.claimLeave("orders", "nobody"));
    }

    @Test
    void theHistoryIsJepsenOperations(RlockdServer srv) throws Exception {
        srv.freezeClock();
        assertEquals("OK", srv.commandString("SET", "orders", "tok-a", "NX", "PX", "30000"));
        assertEquals(null, srv.command("SET", "orders", "tok-b", "NX", "PX", "30000")); // refused
        srv.advanceClock(31_000);
        assertEquals("OK", srv.commandString("SET", "orders", "tok-b", "NX", "PX", "30000"));
        java.nio.file.Path file = java.nio.file.Files.createTempFile("history", ".json");
        String doc = srv.history(file, "ord*");
        assertEquals(doc, java.nio.file.Files.readString(file));
        List<String> lines = doc.lines().filter(l -> l.startsWith("{")).collect(Collectors.toList());
        assertEquals(8, lines.size(), doc);
        String[] want = {
            "{\"index\":0, \"time\":0, \"type\":\"invoke\", \"process\":0, \"f\":\"acquire\", \"value\":{\"key\":\"orders\", \"db\":0, \"holder\":\"tok-a\"",
            "{\"index\":3, \"time\":0, \"type\":\"fail\", \"process\":1, \"f\":\"acquire\", \"value\":{\"key\":\"orders\", \"db\":0, \"holder\":\"tok-b\"",
            "{\"index\":4, \"time\":31000000000, \"type\":\"info\", \"process\":\"nemesis\", \"f\":\"expire\"",
            "{\"index\":7, \"time\":31000000000, \"type\":\"ok\", \"process\":1, \"f\":\"acquire\"",
        };
        int[] at = {0, 3, 4, 7};
        for (int i = 0; i < at.length; i++) {
            assertTrue(lines.get(at[i]).startsWith(want[i]), lines.get(at[i]));
        }
        assertEquals("[\n]\n", srv.history("nothing*"));
    }

    @Test
    void clock(RlockdServer srv) throws Exception {
        srv.freezeClock();
        ClockInfo info = srv.clockInfo();
        assertTrue(info.frozen());
        long now = srv.clockMs();
        assertEquals(info.nowMs(), now);
        Thread.sleep(20);
        assertEquals(now, srv.clockMs());
        assertEquals(now + 1500, srv.advanceClock(1500));
        assertEquals(now + 2500, srv.advanceClock(Duration.ofSeconds(1)));
        long base = (now / 1000 - 3600) * 1000;
        assertEquals(base, srv.setClock(base));
        List<?> time = (List<?>) srv.command("TIME");
        assertEquals(Long.toString(base / 1000), new String((byte[]) time.get(0), StandardCharsets.UTF_8));
        assertTrue(Math.abs(srv.clockInfo().offsetMs() + 3_600_000) < 5_000);
        srv.resumeClock();
        assertFalse(srv.clockInfo().frozen());
        Thread.sleep(20);
        assertTrue(srv.clockMs() > base);
        long skewed = srv.skewClock(-60_000);
        assertTrue(Math.abs(skewed - (System.currentTimeMillis() - 60_000)) < 1_000);
        assertTrue(Math.abs(srv.clockInfo().offsetMs() + 60_000) < 1_000);
    }

    @Test
    void tokenLockEventsAndSnapshots(RlockdServer srv) {
        srv.freezeClock();
        assertEquals("OK", srv.command("SET", "lock:a", "token-1", "PX", "10000", "NX"));
        LockInfo expected = new LockInfo("lock:a", 0, "token", java.util.Optional.empty(), OptionalLong.of(10_000),
                OptionalLong.empty(), List.of(new LockInfo.Holder("token-1", 1, OptionalLong.of(10_000),
                        java.util.OptionalDouble.empty())), List.of());
        assertEquals(List.of(expected), srv.locks());
        assertEquals(List.of(expected), srv.locks("lock:*"));
        assertEquals(List.of(), srv.locks("other:*"));
        assertTrue(srv.locksText().startsWith("db0 lock:a token (lease 10000 ms)\n  holder token-1 x1"),
                srv.locksText());
        srv.snapshot("before");
        assertEquals(List.of("before"), srv.snapshots());
        assertEquals(1L, srv.command("DEL", "lock:a"));
        srv.restore("before");
        assertEquals(List.of(expected), srv.locks());
        RlockdException missing = assertThrows(RlockdException.class, () -> srv.restore("missing"));
        assertTrue(missing.getMessage().contains("no snapshot named 'missing'"), missing.getMessage());
        srv.advanceClock(10_000);
        assertEquals(List.of(), srv.locks());

        List<LockEvent> events = srv.lockEvents("lock:a");
        assertEquals(List.of("acquired", "released", "acquired", "expired"),
                events.stream().map(LockEvent::event).collect(Collectors.toList()));
        assertEquals("(expiry)", events.get(3).command());
        assertEquals(0, events.get(3).client());
        assertEquals(events.subList(2, 4), srv.lockEvents("lock:a", events.get(1).id()));
        assertEquals(events.subList(3, 4), srv.lockEvents(null, events.get(2).id()));
        assertEquals(events, srv.lockEvents());
        assertEquals(List.of(), srv.checkLocks());
        srv.assertLocksSafe();

        assertEquals("OK", srv.command("SET", "lock:a", "token-2", "PX", "10000", "NX"));
        // token-1 had expired while held (its release was a restore, not a DEL by its owner)
        List<String> violations = srv.checkLocks();
        LocksUnsafeError e = assertThrows(LocksUnsafeError.class, srv::assertLocksSafe);
        assertEquals(violations, e.violations());
        assertTrue(e.getMessage().contains("acquired by token-2 after its lease expired while held by token-1"),
                e.getMessage());
        srv.resetLockChecks();
        srv.assertLocksSafe();
        assertEquals(List.of(), srv.lockEvents());
    }

    @Test
    void faultsAreSetListedAndCleared(RlockdServer srv) throws Exception {
        assertThrows(IllegalStateException.class, () -> Fault.freeze(10).jitter(5));
        RlockdException refused = assertThrows(RlockdException.class,
                () -> srv.addFault(Fault.latency(10).channel("x")));
        assertTrue(refused.getMessage().contains("CHANNEL goes with DROPMSG"), refused.getMessage());

        long slow = srv.addFault(Fault.latency(300).jitter(0).command("get").times(1));
        long close = srv.addFault(Fault.closeAfter().command("eval").key("lock:*"));
        long drop = srv.addFault(Fault.dropMessages().channel("events:*"));
        List<FaultInfo> faults = srv.faults();
        assertEquals(List.of(slow, close, drop), faults.stream().map(FaultInfo::id).collect(Collectors.toList()));
        assertEquals(List.of("latency", "close", "dropmsg"),
                faults.stream().map(FaultInfo::kind).collect(Collectors.toList()));
        assertEquals("300 ms, jitter 0 ms", faults.get(0).params());
        assertEquals(OptionalLong.of(1), faults.get(0).timesLeft());
        assertEquals("get", faults.get(0).command().orElseThrow());
        assertEquals("lock:*", faults.get(1).key().orElseThrow());
        assertEquals(OptionalLong.empty(), faults.get(1).timesLeft());

        long started = System.nanoTime();
        srv.command("GET", "k");
        long ms = Duration.ofNanos(System.nanoTime() - started).toMillis();
        assertTrue(ms >= 290, "GET took " + ms + " ms");
        assertEquals(List.of(close, drop), srv.faults().stream().map(FaultInfo::id).collect(Collectors.toList()));
        assertEquals(0, srv.clearFault(slow));
        assertEquals(1, srv.clearFault(close));
        assertEquals(1, srv.clearFaults());
        assertEquals(List.of(), srv.faults());
    }

    @Test
    void killClients(RlockdServer srv) throws Exception {
        try (Socket victim = new Socket("127.0.0.1", srv.port())) {
            OutputStream out = victim.getOutputStream();
            out.write(Resp.encode("CLIENT", "SETNAME", "victim"));
            out.flush();
            Resp.Reader in = new Resp.Reader(victim.getInputStream());
            assertEquals("OK", in.read());
            out.write(Resp.encode("CLIENT", "ID"));
            out.flush();
            long id = (Long) in.read();
            assertEquals(0, srv.killClients("nobody"));
            assertEquals(1, srv.killClients("vic*"));
            victim.setSoTimeout(5_000);
            assertEquals(-1, victim.getInputStream().read()); // closed by the server
            assertEquals(0, srv.killClient(id));
        }
    }
}
