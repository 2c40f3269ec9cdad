package dev.rlockd;

/** Started in a child JVM by {@link RlockdServerTest}: starts a server, says its pid and port, waits to be killed. */
public final class OrphanMain {
    private OrphanMain() {}

    public static void main(String[] args) throws InterruptedException {
        RlockdServer srv = RlockdServer.start();
        System.out.println(srv.pid() + " " + srv.port());
        System.out.flush();
        Thread.sleep(60_000);
    }
}
