package example;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RBucket;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;
import org.redisson.config.SentinelServersConfig;

/**
 * The lock lost in a failover, with Redisson's {@code useSentinelServers()} and RLock.
 *
 * <pre>mvn -q compile exec:java -Dexample.main=example.FailoverMain -Dexec.args="SENTINEL_PORT,PORT,PORT MODE"</pre>
 *
 * Client A takes an RLock on the primary the Sentinels name; Redisson follows its lock script with
 * {@code WAIT} since the primary has a replica. In the lossy modes the primary's replication is
 * paused first (RLOCKD REPL PAUSE), so that WAIT counts no replica and the write never reaches it:
 * by default ({@code lossy-checked}) Redisson then refuses the lock ("None of slaves were synced");
 * with {@code checkLockSyncedSlaves(false)} ({@code lossy}) it grants it, as Redis locks did before
 * that check. {@code replicated}: replication flows, WAIT counts the replica. {@code replica-read}:
 * no failover; Redisson's {@code useMasterSlaveServers()} with {@code ReadMode.SLAVE} reads from the
 * replica, which answers what it has received (stale while replication is paused).
 * The primary crashes (RLOCKD REPL CRASH ... NOW, sent to the replica); the Sentinels promote the
 * replica and publish {@code +switch-master}, which both Redisson clients follow. Client B asks for
 * the same lock; RLOCKD CHECK on the new primary says whether two clients held it. The test-control
 * commands go over a plain socket: Redisson is used as an application uses it.
 */
public class FailoverMain {
    public static void main(String[] args) throws Exception {
        String[] ports = args[0].split(",");
        String mode = args[1];
        int sentinel = Integer.parseInt(ports[0]);
        List<?> primary = (List<?>) command(sentinel, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster");
        int primaryPort = Integer.parseInt((String) primary.get(1));
        List<?> replica = (List<?>) ((List<?>) command(sentinel, "SENTINEL", "REPLICAS", "mymaster")).get(0);
        int replicaPort = Integer.parseInt((String) replica.get(replica.indexOf("port") + 1));

        if (mode.equals("replica-read")) {
            replicaRead(primaryPort, replicaPort);
            return;
        }
        RedissonClient a = client(ports, !mode.equals("lossy"));
        RedissonClient b = null;
        try (Socket events = new Socket("127.0.0.1", Integer.parseInt(ports[1]))) {
            DataInputStream in = new DataInputStream(new BufferedInputStream(events.getInputStream()));
            send(events.getOutputStream(), "SUBSCRIBE", "+switch-master");
            read(in); // the subscription's confirmation
            if (mode.startsWith("lossy")) {
                command(primaryPort, "RLOCKD", "REPL", "PAUSE");
            }
            long waitsBefore = waits(primaryPort);
            RLock lockA = a.getLock("order:42");
            String first;
            try {
                first = String.valueOf(lockA.tryLock(0, 30, TimeUnit.SECONDS));
            } catch (RuntimeException e) {
                first = "refused"; // None of slaves were synced
            }
            long waits = waits(primaryPort) - waitsBefore;

            command(replicaPort, "RLOCKD", "REPL", "CRASH", String.valueOf(primaryPort), "NOW");
            List<?> message = (List<?>) read(in); // message +switch-master "mymaster old-ip old-port ip port"
            String newPort = ((String) message.get(2)).split(" ")[4];

            b = client(ports, true);
            boolean second = b.getLock("order:42").tryLock(0, 30, TimeUnit.SECONDS);
            List<?> violations = (List<?>) command(Integer.parseInt(newPort), "RLOCKD", "CHECK");
            // A follows +switch-master: its writes reach the promoted replica.
            a.getBucket("written-by-a", StringCodec.INSTANCE).set("yes");
            Object landed = command(Integer.parseInt(newPort), "GET", "written-by-a");
            System.out.println(mode + ": first=" + first + " WAITs=" + waits + " second-holder=" + second
                    + " violations=" + violations.size() + " a-follows=" + "yes".equals(landed)
                    + " promoted=" + newPort.equals(String.valueOf(replicaPort)));
            for (Object v : violations) {
                System.out.println(v);
            }
        } finally {
            a.shutdown();
            if (b != null) {
                b.shutdown();
            }
        }
    }

    /**
     * A Redisson client configured as users do: the master's name and the Sentinels (and whether a
     * lock needs its replicas to acknowledge it, Redisson's default).
     */
    static RedissonClient client(String[] ports, boolean checkLockSyncedSlaves) {
        Config config = new Config();
        config.setCheckLockSyncedSlaves(checkLockSyncedSlaves);
        SentinelServersConfig sentinels = config.useSentinelServers().setMasterName("mymaster");
        for (String port : ports) {
            sentinels.addSentinelAddress("redis://127.0.0.1:" + port);
        }
        return Redisson.create(config);
    }

    /** Master/slave mode reading from the replica: fresh while it flows, stale while paused. */
    static void replicaRead(int primaryPort, int replicaPort) throws Exception {
        Config config = new Config();
        config.useMasterSlaveServers()
                .setMasterAddress("redis://127.0.0.1:" + primaryPort)
                .addSlaveAddress("redis://127.0.0.1:" + replicaPort)
                .setReadMode(ReadMode.SLAVE);
        RedissonClient c = Redisson.create(config);
        // Another application writes on the primary (WAIT counts its own writes).
        try (Socket writer = new Socket("127.0.0.1", primaryPort)) {
            DataInputStream in = new DataInputStream(new BufferedInputStream(writer.getInputStream()));
            long readsBefore = calls(replicaPort, "get");
            RLock lock = c.getLock("order:7");
            boolean locked = lock.tryLock(0, 30, TimeUnit.SECONDS); // its WAIT: the replica has it
            boolean seenOnReplica = lock.isLocked(); // a read: answered by the replica
            RBucket<String> bucket = c.getBucket("status", StringCodec.INSTANCE);
            send(writer.getOutputStream(), "SET", "status", "v1");
            read(in);
            send(writer.getOutputStream(), "WAIT", "1", "0");
            read(in);
            boolean fresh = "v1".equals(bucket.get());
            command(primaryPort, "RLOCKD", "REPL", "PAUSE");
            send(writer.getOutputStream(), "SET", "status", "v2"); // the primary has it, the replica not
            read(in);
            boolean stale = "v1".equals(bucket.get());
            command(primaryPort, "RLOCKD", "REPL", "RESUME");
            send(writer.getOutputStream(), "WAIT", "1", "0");
            read(in);
            boolean caughtUp = "v2".equals(bucket.get());
            long reads = calls(replicaPort, "get") - readsBefore;
            System.out.println("replica-read: locked=" + locked + " seen-on-replica=" + seenOnReplica + " fresh=" + fresh
                    + " stale-while-paused=" + stale + " caught-up=" + caughtUp + " gets-on-replica=" + reads);
        } finally {
            c.shutdown();
        }
    }

    /** How many times the node on {@code port} has run {@code command} (INFO commandstats). */
    static long calls(int port, String command) throws IOException {
        String stats = (String) command(port, "INFO", "commandstats");
        String prefix = "cmdstat_" + command + ":calls=";
        for (String line : stats.split("\r\n")) {
            if (line.startsWith(prefix)) {
                return Long.parseLong(line.substring(prefix.length()).split(",")[0]);
            }
        }
        return 0;
    }

    /** How many WAIT commands the node on {@code port} has run. */
    static long waits(int port) throws IOException {
        return calls(port, "wait");
    }

    /** One command on its own connection. */
    static Object command(int port, String... args) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            send(s.getOutputStream(), args);
            return read(new DataInputStream(new BufferedInputStream(s.getInputStream())));
        }
    }

    static void send(OutputStream out, String... args) throws IOException {
        StringBuilder b = new StringBuilder("*").append(args.length).append("\r\n");
        for (String a : args) {
            b.append('$').append(a.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(a).append("\r\n");
        }
        out.write(b.toString().getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    /** A RESP2 reply: strings, integers, arrays; an error is thrown. */
    static Object read(DataInputStream in) throws IOException {
        String line = line(in);
        switch (line.charAt(0)) {
            case '+':
                return line.substring(1);
            case '-':
                throw new IOException(line.substring(1));
            case ':':
                return Long.parseLong(line.substring(1));
            case '$': {
                int n = Integer.parseInt(line.substring(1));
                if (n < 0) {
                    return null;
                }
                byte[] data = new byte[n + 2];
                in.readFully(data);
                return new String(data, 0, n, StandardCharsets.UTF_8);
            }
            case '*': {
                int n = Integer.parseInt(line.substring(1));
                List<Object> items = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    items.add(read(in));
                }
                return items;
            }
            default:
                throw new IOException("unexpected reply: " + line);
        }
    }

    static String line(DataInputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) != '\r') {
            if (c < 0) {
                throw new IOException("connection closed");
            }
            b.append((char) c);
        }
        in.read(); // '\n'
        return b.toString();
    }
}
