// toxiproxy-java (the client Testcontainers' ToxiproxyContainer hands out)
// drives rlockd's Toxiproxy API while Redisson's RLock observes each fault
// through the proxy.
//
// Usage: java -cp <pom.xml's classpath> Drive.java API_PORT RLOCKD_PORT.
// Prints one line per fault; exits non-zero on the first check that fails.

import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.ToxiproxyClient;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

public class Drive {
    static void check(boolean ok, String what) {
        if (!ok) {
            System.err.println("check failed: " + what);
            System.exit(1);
        }
    }

    // No retries, a short timeout: each fault is seen by the call it hits.
    static RedissonClient client(int port) {
        Config config = new Config();
        config.useSingleServer()
                .setAddress("redis://127.0.0.1:" + port)
                .setTimeout(500)
                .setRetryAttempts(0)
                .setConnectionMinimumIdleSize(1)
                .setConnectionPoolSize(1)
                .setSubscriptionConnectionMinimumIdleSize(0)
                .setPingConnectionInterval(0);
        return Redisson.create(config);
    }

    static void lockCycle(RedissonClient r) throws Exception {
        lockCycle(r, "toxi:lock");
    }

    static void lockCycle(RedissonClient r, String name) throws Exception {
        RLock lock = r.getLock(name);
        check(lock.tryLock(0, 10, TimeUnit.SECONDS), "lock not acquired");
        lock.unlock();
    }

    static String fails(ThrowingRunnable fn) {
        try {
            fn.run();
        } catch (Exception e) {
            return e.getClass().getSimpleName();
        }
        check(false, "the call did not fail");
        return null;
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        int apiPort = Integer.parseInt(args[0]);
        int nodePort = Integer.parseInt(args[1]);
        ToxiproxyClient api = new ToxiproxyClient("127.0.0.1", apiPort);
        check(api.version().contains("\"version\": \"2.12.0\""), "version " + api.version());
        check(api.getProxy("rlockd-" + nodePort).getUpstream().equals("127.0.0.1:" + nodePort), "node proxy");

        Proxy proxy = api.createProxy("redis", "127.0.0.1:0", "127.0.0.1:" + nodePort);
        int port = Integer.parseInt(proxy.getListen().substring(proxy.getListen().lastIndexOf(':') + 1));

        // latency: every reply held back 300 ms (downstream).
        RedissonClient r = client(port);
        lockCycle(r);
        proxy.toxics().latency("latency", ToxicDirection.DOWNSTREAM, 300);
        long start = System.nanoTime();
        // The lock script and the unlock script: two replies.
        RLock lock = r.getLock("toxi:lock");
        RedissonClient slow = r;
        check(lock.tryLock(0, 10, TimeUnit.SECONDS), "lock under latency");
        lock.unlock();
        long ms = (System.nanoTime() - start) / 1_000_000;
        check(ms >= 600, "lock and unlock took " + ms + " ms");
        proxy.toxics().get("latency").remove();
        System.out.println("latency: the lock and unlock replies held back 300 ms each");

        // timeout: no reply passes; the lock call times out.
        proxy.toxics().timeout("timeout", ToxicDirection.DOWNSTREAM, 0);
        // The lock script ran on the server; only its reply was held back.
        String name = fails(() -> lockCycle(slow, "toxi:t"));
        check(name.endsWith("TimeoutException"), name);
        proxy.toxics().get("timeout").remove();
        System.out.println("timeout: the lock call failed (a timeout)");
        r.shutdown();

        // reset_peer: the connection is reset when the reply comes.
        r = client(port);
        lockCycle(r);
        proxy.toxics().resetPeer("reset", ToxicDirection.DOWNSTREAM, 0);
        RedissonClient reset = r;
        fails(() -> lockCycle(reset, "toxi:r"));
        proxy.toxics().get("reset").remove();
        r.shutdown();
        System.out.println("reset_peer: the lock call failed");

        // slicer: replies cut into 1-byte pieces, 200 µs apart; reassembled.
        r = client(port);
        String value = "v".repeat(2000);
        r.getBucket("toxi:big", StringCodec.INSTANCE).set(value);
        proxy.toxics().slicer("slicer", ToxicDirection.DOWNSTREAM, 1, 200);
        RedissonClient patient = Redisson.create(patientConfig(port));
        check(value.equals(patient.getBucket("toxi:big", StringCodec.INSTANCE).get()), "get under slicer");
        lockCycle(patient);
        proxy.toxics().get("slicer").remove();
        patient.shutdown();
        System.out.println("slicer: a 2000-byte reply arrived in pieces and read whole; the lock works");

        // down: disabled, the lock call fails; enabled again, a new client locks.
        proxy.disable();
        check(!api.getProxy("redis").isEnabled(), "still enabled");
        RedissonClient down = r;
        fails(() -> lockCycle(down, "toxi:d"));
        r.shutdown();
        proxy.enable();
        r = client(port);
        lockCycle(r);
        r.shutdown();
        System.out.println("down: the lock call failed; enabled again, it works");

        // reset: every toxic removed.
        proxy.toxics().bandwidth("bw", ToxicDirection.UPSTREAM, 1).setToxicity(0.5f);
        check(proxy.toxics().get("bw").getToxicity() == 0.5f, "toxicity");
        api.reset();
        check(proxy.toxics().getAll().isEmpty(), "toxics after reset");
        System.out.println("reset: every toxic removed");

        proxy.delete();
        check(api.getProxyOrNull("redis") == null, "deleted proxy still listed");
        System.out.println("toxiproxy-java: ok");
        System.exit(0);
    }

    // Redisson with time for a sliced reply (2000 pieces, 200 µs apart).
    static Config patientConfig(int port) {
        Config config = new Config();
        config.useSingleServer()
                .setAddress("redis://127.0.0.1:" + port)
                .setTimeout(10_000)
                .setRetryAttempts(0)
                .setConnectionMinimumIdleSize(1)
                .setConnectionPoolSize(1)
                .setSubscriptionConnectionMinimumIdleSize(0);
        return config;
    }
}
