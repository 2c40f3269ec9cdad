package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The topology classes have every method clients/surface.tsv lists for them. */
class SurfaceTest {

    static String camel(String name) {
        StringBuilder out = new StringBuilder();
        boolean up = false;
        for (char c : name.toCharArray()) {
            if (c == '_') {
                up = true;
            } else {
                out.append(up ? Character.toUpperCase(c) : c);
                up = false;
            }
        }
        return out.toString();
    }

    static Set<String> methods(Class<?> c) {
        return Stream.of(c.getMethods()).map(Method::getName).collect(Collectors.toSet());
    }

    @Test
    void everyTopologyClassHasTheSurfaceTablesMethods() throws IOException {
        String env = System.getenv("RLOCKD_SURFACE");
        Path table = env != null && !env.isEmpty() ? Paths.get(env) : Paths.get("..", "surface.tsv");
        assumeTrue(Files.isRegularFile(table), "no surface table at " + table + " (RLOCKD_SURFACE names it)");
        Map<String, Set<String>> classes = Map.of("cluster", methods(RlockdCluster.class), "replicated",
                methods(RlockdReplicated.class));
        List<String> missing = new ArrayList<>();
        for (String line : Files.readAllLines(table)) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            String[] cols = line.split("\t");
            for (int i = 1; i < cols.length; i++) {
                if (!classes.get(cols[i]).contains(camel(cols[0]))) {
                    missing.add(cols[i] + "." + camel(cols[0]));
                }
            }
        }
        assertEquals(List.of(), missing, "missing from the Java front end");
    }
}
