package example;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The paused holder with Redisson's watchdog lock: the application believes it is inside its
 * critical section (RLOCKD CLAIM) while the watchdog's renewals are lost and the lease runs
 * out; a second client takes the lock. RLOCKD CHECK says so, and the timeline (written to
 * the second argument) shows why.
 *
 * <pre>mvn -q compile exec:java -Dexample.main=example.PausedHolderMain -Dexec.args="redis://127.0.0.1:6379 timeline.html"</pre>
 */
public class PausedHolderMain {
    public static void main(String[] args) throws Exception {
        String address = args.length > 0 ? args[0] : "redis://127.0.0.1:6379";
        Path out = Path.of(args.length > 1 ? args[1] : "timeline.html");
        URI uri = URI.create(address);
        RedissonClient a = client(address);
        RedissonClient b = client(address);
        try (Admin admin = new Admin(uri.getHost(), uri.getPort())) {
            admin.call("RLOCKD", "CLOCK", "FREEZE"); // the test drives time
            RLock lock = a.getLock("orders");
            lock.lock(); // no lease: the watchdog renews it...
            String holder = a.getId() + ":" + Thread.currentThread().getId();
            // ...but its renewals are lost from now on,
            admin.call("RLOCKD", "FAULT", "ERROR", "ERR renewal lost", "COMMAND", "eval*", "KEY", "orders");
            admin.call("RLOCKD", "CLAIM", "ENTER", "orders", holder);
            // and A pauses past the watchdog's 30 s lease.
            admin.call("RLOCKD", "CLOCK", "ADVANCE", "31000");
            admin.call("RLOCKD", "FAULT", "CLEAR");
            boolean second = b.getLock("orders").tryLock(0, 30, TimeUnit.SECONDS); // B holds it now
            admin.call("RLOCKD", "CLAIM", "LEAVE", "orders", holder);
            List<?> violations = (List<?>) admin.call("RLOCKD", "CHECK");
            Files.writeString(out, (String) admin.call("RLOCKD", "TIMELINE"));
            System.out.println("paused holder: second-holder=" + second + " violations=" + violations.size());
            for (Object v : violations) {
                System.out.println(v);
            }
        } finally {
            a.shutdown();
            b.shutdown();
        }
    }

    static RedissonClient client(String address) {
        Config config = new Config();
        config.useSingleServer().setAddress(address);
        return Redisson.create(config);
    }

    /** A minimal RESP2 connection for the RLOCKD commands: bulk strings arrive as String. */
    static final class Admin implements AutoCloseable {
        private final Socket socket;
        private final InputStream in;
        private final OutputStream outStream;

        Admin(String host, int port) throws IOException {
            socket = new Socket(host, port);
            in = new BufferedInputStream(socket.getInputStream());
            outStream = socket.getOutputStream();
        }

        Object call(String... argv) throws IOException {
            ByteArrayOutputStream req = new ByteArrayOutputStream();
            req.write(("*" + argv.length + "\r\n").getBytes(StandardCharsets.UTF_8));
            for (String a : argv) {
                byte[] b = a.getBytes(StandardCharsets.UTF_8);
                req.write(("$" + b.length + "\r\n").getBytes(StandardCharsets.UTF_8));
                req.write(b);
                req.write("\r\n".getBytes(StandardCharsets.UTF_8));
            }
            outStream.write(req.toByteArray());
            outStream.flush();
            return read();
        }

        private Object read() throws IOException {
            int type = in.read();
            String line = line();
            switch (type) {
                case '+':
                    return line;
                case '-':
                    throw new IOException(line);
                case ':':
                    return Long.parseLong(line);
                case '$': {
                    int n = Integer.parseInt(line);
                    if (n < 0) {
                        return null;
                    }
                    byte[] b = in.readNBytes(n + 2);
                    return new String(b, 0, n, StandardCharsets.UTF_8);
                }
                case '*': {
                    int n = Integer.parseInt(line);
                    List<Object> items = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        items.add(read());
                    }
                    return items;
                }
                default:
                    throw new IOException("unexpected reply type " + type);
            }
        }

        private String line() throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            int c;
            while ((c = in.read()) != '\r') {
                if (c < 0) {
                    throw new IOException("connection closed");
                }
                b.write(c);
            }
            in.read(); // '\n'
            return b.toString(StandardCharsets.UTF_8);
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}
