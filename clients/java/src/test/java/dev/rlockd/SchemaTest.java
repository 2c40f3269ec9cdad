package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link Fault}'s factories and scope methods, and the reply classes, agree with the server's
 * description of itself ({@code RLOCKD SCHEMA}, written from the server's own table): a kind, an
 * argument, a scope option or a reply field added or renamed on one side fails here.
 */
class SchemaTest {
    @RegisterExtension
    static final RlockdExtension rlockd = RlockdExtension.perClass();

    /** RESP2's flat arrays as maps, all the way down (a map of the schema starts with "name"). */
    private static Object maps(Object v) {
        if (v instanceof byte[]) {
            return new String((byte[]) v, StandardCharsets.UTF_8);
        }
        if (!(v instanceof List<?>)) {
            return v;
        }
        List<Object> items = ((List<?>) v).stream().map(SchemaTest::maps).collect(Collectors.toList());
        if (!items.isEmpty() && items.size() % 2 == 0 && "name".equals(items.get(0))) {
            Map<String, Object> m = new LinkedHashMap<>();
            for (int i = 0; i < items.size(); i += 2) {
                m.put((String) items.get(i), items.get(i + 1));
            }
            return m;
        }
        return items;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> schema(RlockdServer srv, String sub) {
        return (Map<String, Object>) maps(srv.command("RLOCKD", "SCHEMA", sub));
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> ops(Map<String, Object> sub) {
        return (List<Map<String, Object>>) sub.get("ops");
    }

    private static Map<String, Object> op(Map<String, Object> sub, String name) {
        return ops(sub).stream().filter(o -> name.equals(o.get("name"))).findFirst().orElseThrow();
    }

    @SuppressWarnings("unchecked")
    private static List<String> words(Object v) {
        return (List<String>) v;
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> args(Map<String, Object> op) {
        return (List<Map<String, Object>>) op.get("args");
    }

    private static Object dummy(Class<?> type) {
        return type == long.class ? (Object) 7L : "ERR x";
    }

    /** Every public factory of Fault, with the arguments after RLOCKD FAULT it makes. */
    private static List<Fault> factories() throws Exception {
        List<Fault> out = new ArrayList<>();
        for (Method m : Fault.class.getDeclaredMethods()) {
            if (Modifier.isStatic(m.getModifiers()) && Modifier.isPublic(m.getModifiers())
                    && m.getReturnType() == Fault.class) {
                out.add((Fault) m.invoke(null, Arrays.stream(m.getParameterTypes()).map(SchemaTest::dummy).toArray()));
            }
        }
        return out;
    }

    @Test
    void theFaultFactoriesMatchTheServer(RlockdServer srv) throws Exception {
        Map<String, Object> fault = schema(srv, "FAULT");
        Map<String, Map<String, Object>> kinds = new LinkedHashMap<>();
        for (Map<String, Object> o : ops(fault)) {
            if ("kind".equals(o.get("group"))) {
                kinds.put(((String) o.get("name")).toUpperCase(Locale.ROOT), o);
            }
        }
        Map<String, Set<String>> choicesMade = new LinkedHashMap<>();
        for (Fault f : factories()) {
            List<String> a = f.args();
            Map<String, Object> kind = kinds.get(a.get(0));
            assertNotNull(kind, "Fault makes kind " + a.get(0) + ", which the server does not have");
            List<Map<String, Object>> plain = args(kind).stream().filter(x -> x.get("token") == null).collect(Collectors.toList());
            long required = plain.stream().filter(x -> Long.valueOf(0).equals(x.get("optional"))).count();
            int positional = a.size() - 1;
            assertTrue(positional >= required && positional <= plain.size(), f + " against " + kind);
            for (int i = 0; i < positional; i++) {
                Map<String, Object> arg = plain.get(i);
                if ("choice".equals(arg.get("type"))) {
                    assertTrue(words(arg.get("choices")).contains(a.get(1 + i).toLowerCase(Locale.ROOT)), f.toString());
                    choicesMade.computeIfAbsent(a.get(0), k -> new TreeSet<>()).add(a.get(1 + i).toLowerCase(Locale.ROOT));
                }
            }
            // jitter(): the optional arguments after a word.
            List<Map<String, Object>> tokens = args(kind).stream().filter(x -> x.get("token") != null).collect(Collectors.toList());
            boolean jitters;
            try {
                List<String> withJitter = f.jitter(5).args();
                jitters = true;
                assertEquals(List.of("JITTER", "5"), withJitter.subList(withJitter.size() - 2, withJitter.size()));
            } catch (IllegalStateException refused) {
                jitters = false;
            }
            assertEquals(tokens.stream().map(x -> x.get("token")).collect(Collectors.toList()), jitters ? List.of("JITTER") : List.<String>of(),
                    "jitter() on " + a.get(0));
        }
        Set<String> made = factories().stream().map(f -> f.args().get(0)).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(kinds.keySet()), made, "the kinds Fault's factories make");
        for (var e : choicesMade.entrySet()) {
            Map<String, Object> arg = args(kinds.get(e.getKey())).stream()
                    .filter(x -> "choice".equals(x.get("type"))).findFirst().orElseThrow();
            assertEquals(new TreeSet<>(words(arg.get("choices"))), e.getValue(), "every choice of " + e.getKey());
        }

        // The scope methods: each adds its word and value; together they are the server's options.
        Set<String> options = new TreeSet<>();
        for (Map<String, Object> k : kinds.values()) {
            options.addAll(words(k.get("options")));
        }
        options.addAll(words(op(fault, "kill").get("options")));
        Set<String> scope = new TreeSet<>();
        for (Method m : Fault.class.getDeclaredMethods()) {
            if (!Modifier.isStatic(m.getModifiers()) && Modifier.isPublic(m.getModifiers())
                    && m.getReturnType() == Fault.class && !m.getName().equals("jitter")) {
                Fault f = Fault.error("ERR x");
                m.invoke(f, dummy(m.getParameterTypes()[0]));
                List<String> a = f.args();
                scope.add(a.get(a.size() - 2).toLowerCase(Locale.ROOT));
            }
        }
        assertEquals(options, scope, "Fault's scope methods");
    }

    private static Set<String> fieldsOf(Class<?> type) {
        return Arrays.stream(type.getDeclaredFields())
                .filter(f -> !Modifier.isStatic(f.getModifiers()))
                .map(f -> f.getName())
                .collect(Collectors.toCollection(TreeSet::new));
    }

    private static Set<String> camel(Object fields) {
        return words(fields).stream()
                .map(n -> Pattern.compile("_([a-z])").matcher(n).replaceAll(r -> r.group(1).toUpperCase(Locale.ROOT)))
                .collect(Collectors.toCollection(TreeSet::new));
    }

    @Test
    void theReplyClassesHaveTheServersFields(RlockdServer srv) {
        assertEquals(camel(op(schema(srv, "FAULT"), "list").get("fields")), fieldsOf(FaultInfo.class));
        assertEquals(camel(op(schema(srv, "CLOCK"), "info").get("fields")), fieldsOf(ClockInfo.class));
        assertEquals(camel(schema(srv, "LOCKS").get("fields")), fieldsOf(LockInfo.class));
        assertEquals(camel(schema(srv, "EVENTS").get("fields")), fieldsOf(LockEvent.class));
    }

    @Test
    @SuppressWarnings("unchecked")
    void everyRlockdOperationSentIsInTheSchema(RlockdServer srv) throws Exception {
        Map<String, Set<String>> ops = new LinkedHashMap<>();
        for (Object s : (List<Object>) maps(srv.command("RLOCKD", "SCHEMA"))) {
            Map<String, Object> sub = (Map<String, Object>) s;
            ops.put((String) sub.get("name"), ops(sub).stream().map(o -> (String) o.get("name")).collect(Collectors.toSet()));
        }
        Pattern call = Pattern.compile("(?:rlockd\\(|\"RLOCKD\", )\"([A-Z]+)\"(?:, \"([A-Z]+)\")?");
        int found = 0;
        try (Stream<Path> files = Files.list(Path.of("src/main/java/dev/rlockd"))) {
            for (Path p : files.filter(p -> p.toString().endsWith(".java")).collect(Collectors.toList())) {
                Matcher m = call.matcher(Files.readString(p));
                while (m.find()) {
                    found++;
                    Set<String> names = ops.get(m.group(1).toLowerCase(Locale.ROOT));
                    assertNotNull(names, "RLOCKD " + m.group(1) + " in " + p.getFileName());
                    if (m.group(2) != null && !names.isEmpty()) {
                        assertTrue(names.contains(m.group(2).toLowerCase(Locale.ROOT)),
                                "RLOCKD " + m.group(1) + " " + m.group(2) + " in " + p.getFileName());
                    }
                }
            }
        }
        assertFalse(found < 10, "only " + found + " RLOCKD calls found");
    }
}
