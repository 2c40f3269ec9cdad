package dev.rlockd;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** The little RESP2 that {@link RlockdServer#command(String...)} needs. */
final class Resp {
    private Resp() {}

    static byte[] encode(String... args) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.UTF_8));
        for (String a : args) {
            byte[] v = a.getBytes(StandardCharsets.UTF_8);
            b.writeBytes(("$" + v.length + "\r\n").getBytes(StandardCharsets.UTF_8));
            b.writeBytes(v);
            b.writeBytes("\r\n".getBytes(StandardCharsets.UTF_8));
        }
        return b.toByteArray();
    }

    static final class Reader {
        private final InputStream in;

        Reader(InputStream in) {
            this.in = new BufferedInputStream(in);
        }

        private String line() throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            int c;
            while ((c = in.read()) != '\r') {
                if (c < 0) {
                    throw new EOFException("connection closed by the server");
                }
                b.write(c);
            }
            in.read(); // '\n'
            return b.toString(StandardCharsets.UTF_8);
        }

        Object read() throws IOException {
            String line = line();
            String rest = line.substring(1);
            switch (line.charAt(0)) {
                case '+':
                    return rest;
                case '-':
                    throw new RlockdException(rest);
                case ':':
                    return Long.parseLong(rest);
                case '$': {
                    int n = Integer.parseInt(rest);
                    if (n < 0) {
                        return null;
                    }
                    byte[] data = in.readNBytes(n);
                    in.readNBytes(2);
                    return data;
                }
                case '*': {
                    int n = Integer.parseInt(rest);
                    if (n < 0) {
                        return null;
                    }
                    List<Object> items = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        items.add(read());
                    }
                    return items;
                }
                default:
                    throw new IOException("unexpected reply " + line);
            }
        }
    }
}
