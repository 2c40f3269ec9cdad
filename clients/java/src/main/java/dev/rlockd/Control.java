package dev.rlockd;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;

/** Decoding of the {@code RLOCKD} replies: RESP2 maps arrive as flat arrays {@code [k1, v1, k2, v2, ...]}. */
final class Control {
    private Control() {}

    static String text(Object v) {
        if (v instanceof byte[]) {
            return new String((byte[]) v, StandardCharsets.UTF_8);
        }
        if (v instanceof String) {
            return (String) v;
        }
        throw new RlockdException("expected a string, got " + v);
    }

    static Optional<String> optText(Object v) {
        return v == null ? Optional.empty() : Optional.of(text(v));
    }

    static long integer(Object v) {
        if (v instanceof Long) {
            return (Long) v;
        }
        throw new RlockdException("expected an integer, got " + v);
    }

    static OptionalLong optInteger(Object v) {
        return v == null ? OptionalLong.empty() : OptionalLong.of(integer(v));
    }

    static List<?> list(Object v) {
        if (v instanceof List) {
            return (List<?>) v;
        }
        throw new RlockdException("expected an array, got " + v);
    }

    static List<String> texts(Object v) {
        List<String> out = new ArrayList<>();
        for (Object o : list(v)) {
            out.add(text(o));
        }
        return out;
    }

    static Map<String, Object> map(Object v) {
        List<?> flat = list(v);
        if (flat.size() % 2 != 0) {
            throw new RlockdException("expected a map as a flat array, got " + flat.size() + " items");
        }
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < flat.size(); i += 2) {
            m.put(text(flat.get(i)), flat.get(i + 1));
        }
        return m;
    }

    static LockInfo lock(Object v) {
        Map<String, Object> m = map(v);
        List<LockInfo.Holder> holders = new ArrayList<>();
        for (Object h : list(m.get("holders"))) {
            Map<String, Object> x = map(h);
            Object score = x.get("score");
            holders.add(new LockInfo.Holder(text(x.get("id")), integer(x.get("count")), optInteger(x.get("lease_ms")),
                    score == null ? OptionalDouble.empty() : OptionalDouble.of(Double.parseDouble(text(score)))));
        }
        List<LockInfo.Waiter> waiters = new ArrayList<>();
        for (Object w : list(m.get("waiters"))) {
            Map<String, Object> x = map(w);
            waiters.add(new LockInfo.Waiter(text(x.get("id")), optInteger(x.get("deadline_ms"))));
        }
        return new LockInfo(text(m.get("key")), (int) integer(m.get("db")), text(m.get("kind")), optText(m.get("mode")),
                optInteger(m.get("lease_ms")), optInteger(m.get("value")), holders, waiters);
    }

    static LockEvent event(Object v) {
        Map<String, Object> m = map(v);
        return new LockEvent(integer(m.get("id")), integer(m.get("time_ms")), (int) integer(m.get("db")),
                text(m.get("key")), text(m.get("kind")), text(m.get("event")), text(m.get("holder")),
                integer(m.get("count")), integer(m.get("client")), text(m.get("command")));
    }

    static FaultInfo fault(Object v) {
        Map<String, Object> m = map(v);
        return new FaultInfo(integer(m.get("id")), text(m.get("kind")), text(m.get("params")), optText(m.get("command")),
                optText(m.get("key")), optText(m.get("client")), optInteger(m.get("client_id")),
                optText(m.get("channel")), optInteger(m.get("times_left")), integer(m.get("hits")));
    }
}
