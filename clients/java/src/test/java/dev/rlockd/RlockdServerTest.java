package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RlockdServerTest {

    static boolean waitUntilGone(long pid) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10); // hang guard only
        while (System.nanoTime() < deadline) {
            Optional<ProcessHandle> h = ProcessHandle.of(pid);
            if (h.isEmpty() || !h.get().isAlive()) {
                return true;
            }
            Thread.sleep(20);
        }
        return false;
    }

    @Test
    void startUrlPortCommandClose() throws Exception {
        RlockdServer srv = RlockdServer.start();
        int port = srv.port();
        assertEquals("redis://127.0.0.1:" + port, srv.url());
        assertTrue(srv.ping());
        assertEquals("OK", srv.command("SET", "k", "v"));
        assertArrayEquals("v".getBytes(StandardCharsets.UTF_8), (byte[]) srv.command("GET", "k"));
        assertEquals(1L, srv.command("INCR", "n"));
        RlockdException err = assertThrows(RlockdException.class, () -> srv.command("NOSUCHCOMMAND"));
        assertTrue(err.getMessage().contains("unknown command"), err.getMessage());
        long pid = srv.pid();
        srv.close();
        assertFalse(srv.isRunning());
        assertTrue(waitUntilGone(pid));
        assertThrows(java.io.IOException.class, () -> new Socket("127.0.0.1", port).close());
        srv.close(); // twice is fine
    }

    @Test
    void passwordGoesIntoTheUrl() {
        try (RlockdServer srv = RlockdServer.builder().password("s3cret").start()) {
            assertEquals("redis://:s3cret@127.0.0.1:" + srv.port(), srv.url());
            assertTrue(srv.ping());
        }
    }

    @Test
    void manyServersAreIndependent() {
        List<RlockdServer> servers = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                servers.add(RlockdServer.start());
            }
            HashSet<Integer> ports = new HashSet<>();
            for (int i = 0; i < 3; i++) {
                ports.add(servers.get(i).port());
                assertEquals("OK", servers.get(i).command("SET", "lock", "o" + i, "NX"));
            }
            assertEquals(3, ports.size());
            for (int i = 0; i < 3; i++) {
                assertEquals("o" + i, new String((byte[]) servers.get(i).command("GET", "lock"), StandardCharsets.UTF_8));
            }
        } finally {
            servers.forEach(RlockdServer::close);
        }
    }

    @Test
    void takenPortIsAClearError() {
        try (RlockdServer first = RlockdServer.start()) {
            RlockdException e = assertThrows(RlockdException.class,
                    () -> RlockdServer.builder().port(first.port()).start());
            assertTrue(e.getMessage().contains(first.port() + ": the port is already in use"), e.getMessage());
            assertTrue(e.getMessage().contains("--- rlockd log ---"), e.getMessage());
            assertTrue(first.ping());
        }
    }

    @Test
    void missingBinaryIsAClearError(@TempDir Path dir) {
        Path missing = dir.resolve("nope/rlockd");
        RlockdException e = assertThrows(RlockdException.class, () -> RlockdServer.builder().binary(missing).start());
        assertTrue(e.getMessage().contains("rlockd binary not found: " + missing), e.getMessage());
        System.setProperty(NativeBinary.PROPERTY, missing.toString());
        try {
            RlockdException p = assertThrows(RlockdException.class, RlockdServer::start);
            assertTrue(p.getMessage().contains("rlockd.binary system property"), p.getMessage());
        } finally {
            System.clearProperty(NativeBinary.PROPERTY);
        }
    }

    @Test
    void systemPropertyRunsThatBinary(@TempDir Path dir) throws Exception {
        Path copy = dir.resolve("my-rlockd");
        Files.copy(NativeBinary.path(), copy);
        System.setProperty(NativeBinary.PROPERTY, copy.toString());
        try (RlockdServer srv = RlockdServer.start()) {
            assertEquals(copy.toString(), Files.readSymbolicLink(Path.of("/proc/" + srv.pid() + "/exe")).toString());
        } finally {
            System.clearProperty(NativeBinary.PROPERTY);
        }
    }

    @Test
    void platformIsChosenAtRunTimeWithPathAsTheFallback(@TempDir Path dir) throws Exception {
        assertEquals("linux-x86_64", NativeBinary.platform("Linux", "amd64"));
        assertEquals("darwin-aarch64", NativeBinary.platform("Mac OS X", "aarch64"));
        assertEquals("linux-aarch64", NativeBinary.platform("Linux", "arm64"));
        assertEquals("/dev/rlockd/native/" + NativeBinary.PLATFORM + "/rlockd", NativeBinary.RESOURCE);
        assertTrue(NativeBinary.class.getResource(NativeBinary.RESOURCE) != null, "this build carries " + NativeBinary.RESOURCE);
        // where the jar carries no binary for the platform: rlockd on PATH, else one line on how to get one
        Path empty = Files.createDirectories(dir.resolve("empty"));
        RlockdException e = assertThrows(RlockdException.class, () -> NativeBinary.onPath(empty.toString()));
        assertTrue(e.getMessage().contains("cargo install --path"), e.getMessage());
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Path exe = Files.copy(NativeBinary.path(), bin.resolve("rlockd"));
        assertEquals(exe, NativeBinary.onPath(empty + java.io.File.pathSeparator + bin));
        try (RlockdServer srv = RlockdServer.builder().binary(NativeBinary.onPath(bin.toString())).start()) {
            assertTrue(srv.ping());
        }
    }

    @Test
    void earlyExitReportsCodeAndLog() {
        RlockdException e = assertThrows(RlockdException.class,
                () -> RlockdServer.builder().arg("--no-such-parameter", "1").start());
        assertTrue(e.getMessage().contains("exited with code"), e.getMessage());
        assertTrue(e.logs() != null && !e.logs().isBlank(), "log attached");
    }

    @Test
    void logsAreCaptured() {
        RlockdServer srv = RlockdServer.builder().arg("--loglevel", "verbose").start();
        srv.close();
        assertTrue(srv.logs().contains("ready to accept connections"), srv.logs());
    }

    @Test
    void concurrentExtractionGivesOneVerifiedBinary(@TempDir Path cache) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<Path>> results = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                results.add(pool.submit(() -> NativeBinary.extractTo(cache)));
            }
            Path first = results.get(0).get(30, TimeUnit.SECONDS);
            for (Future<Path> f : results) {
                assertEquals(first, f.get(30, TimeUnit.SECONDS));
            }
            assertTrue(Files.isExecutable(first));
            assertEquals(first.getParent().getFileName().toString(), NativeBinary.sha256(Files.readAllBytes(first)));
            // the build recorded the packed binary's hash and size beside it
            java.util.Properties meta = new java.util.Properties();
            try (var in = NativeBinary.class.getResourceAsStream(NativeBinary.RESOURCE + ".properties")) {
                meta.load(in);
            }
            assertEquals(first.getParent().getFileName().toString(), meta.getProperty("sha256"));
            assertEquals(Files.size(first), Long.parseLong(meta.getProperty("size")));
            try (var files = Files.list(first.getParent())) {
                assertEquals(1, files.count(), "no temporary file is left");
            }
            // a damaged cache entry is noticed and replaced
            Files.write(first, new byte[] {1, 2, 3});
            assertEquals(first, NativeBinary.extractTo(cache));
            assertEquals(first.getParent().getFileName().toString(), NativeBinary.sha256(Files.readAllBytes(first)));
            try (RlockdServer srv = RlockdServer.builder().binary(first).start()) {
                assertTrue(srv.ping());
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void killedJvmLeavesNoServer() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), OrphanMain.class.getName())
                .redirectErrorStream(true)
                .start();
        try {
            BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String line = r.readLine();
            assertTrue(line != null && line.matches("\\d+ \\d+"), "child said: " + line);
            long pid = Long.parseLong(line.split(" ")[0]);
            assertTrue(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
            child.destroyForcibly(); // SIGKILL: no shutdown hook runs, only the pipe tells
            child.waitFor(10, TimeUnit.SECONDS);
            assertTrue(waitUntilGone(pid), "rlockd outlived its killed JVM");
        } finally {
            child.destroyForcibly();
        }
    }

    @Test
    void portsDiffer() {
        try (RlockdServer a = RlockdServer.start(); RlockdServer b = RlockdServer.start()) {
            assertNotEquals(a.port(), b.port());
        }
    }
}
