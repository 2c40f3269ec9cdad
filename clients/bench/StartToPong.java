// Start-to-first-PONG of the Java front end: RlockdServer.start() until the
// first PING is answered through srv.command, N times (after the JVM's first
// start, timed on its own: it loads the classes and finds, or extracts, the
// binary in the cache). Then a cluster of 3 (RlockdCluster.start(3)) until every node
// answers PING through srv.command.
//   java -cp clients/java/target/classes clients/bench/StartToPong.java [N]
import dev.rlockd.RlockdCluster;
import dev.rlockd.RlockdServer;
import java.util.Arrays;

public class StartToPong {
    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        long f0 = System.nanoTime();
        try (RlockdServer warm = RlockdServer.start()) {
            if (!warm.ping()) {
                throw new IllegalStateException("no PONG");
            }
        }
        System.out.printf("java first start-to-PONG in this JVM: %.1f ms%n", (System.nanoTime() - f0) / 1e6);
        double[] ms = new double[n];
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            try (RlockdServer srv = RlockdServer.start()) {
                if (!srv.ping()) {
                    throw new IllegalStateException("no PONG");
                }
                ms[i] = (System.nanoTime() - t0) / 1e6;
            }
        }
        Arrays.sort(ms);
        System.out.printf("java start-to-first-PONG over %d, srv.command: median %.1f ms, p90 %.1f ms, min %.1f ms%n",
                n, ms[n / 2], ms[(int) Math.ceil(n * 0.9) - 1], ms[0]);
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            try (RlockdCluster c = RlockdCluster.start(3)) {
                for (RlockdServer node : c.nodes()) {
                    if (!node.ping()) {
                        throw new IllegalStateException("no PONG");
                    }
                }
                ms[i] = (System.nanoTime() - t0) / 1e6;
            }
        }
        Arrays.sort(ms);
        System.out.printf("java start-to-first-PONG over %d, a 3-node cluster, srv.command on every node: "
                + "median %.1f ms, p90 %.1f ms, min %.1f ms%n", n, ms[n / 2], ms[(int) Math.ceil(n * 0.9) - 1], ms[0]);
    }
}
