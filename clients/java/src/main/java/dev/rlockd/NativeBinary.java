package dev.rlockd;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.Properties;

/**
 * Finds the rlockd executable: the {@code rlockd.binary} system property, the
 * {@code RLOCKD_BINARY} environment variable, else the binary packed in this
 * jar for this platform ({@code dev/rlockd/native/<os>-<arch>/rlockd}, chosen at
 * run time), extracted once to a cache directory, else {@code rlockd} on PATH.
 *
 * <p>The cache entry is named after the SHA-256 of the packed binary
 * ({@code ~/.cache/rlockd/<sha256>/rlockd}, or under {@code rlockd.cache.dir} /
 * {@code XDG_CACHE_HOME}); the hash and size come from {@code rlockd.properties}
 * beside it in the jar, written by the build. The binary is checked against
 * the hash when it is extracted; a later JVM takes the cached copy when its
 * size matches, without reading it (a new JVM's first start stays near
 * 0.2 s). Each JVM writes to its own temporary file and renames it into place
 * atomically, so concurrent test JVMs never see a half-written binary.
 */
public final class NativeBinary {
    /** This machine as the jar names its binaries: {@code linux-x86_64}, {@code darwin-aarch64}... */
    static final String PLATFORM = platform(System.getProperty("os.name", ""), System.getProperty("os.arch", ""));
    static final String RESOURCE = "/dev/rlockd/native/" + PLATFORM + "/rlockd";
    public static final String PROPERTY = "rlockd.binary";

    /** The system properties this library reads; another {@code rlockd.*} one is refused. */
    static final List<String> PROPERTIES = List.of(PROPERTY, "rlockd.cache.dir", "rlockd.platform", "rlockd.artifacts",
            "rlockd.record");
    /** The build's own (clients/java/pom.xml), which Surefire passes on to the tests. */
    private static final List<String> BUILD_PROPERTIES = List.of("rlockd.binary.dir", "rlockd.build.dir");

    /** Refuses a misspelt {@code -Drlockd.*} property, which would otherwise be ignored. */
    static void checkProperties() {
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("rlockd.") && !PROPERTIES.contains(name) && !BUILD_PROPERTIES.contains(name)) {
                throw new RlockdException("unknown system property -D" + name + "; accepted: -D"
                        + String.join(", -D", PROPERTIES));
            }
        }
    }
    public static final String ENV = "RLOCKD_BINARY";
    /** How to get a binary where the jar carries none for this platform. */
    static final String HOW_TO_GET = "set -D" + PROPERTY + " or " + ENV + " to an rlockd executable, or put rlockd on "
            + "PATH (cargo install --path <rlockd checkout>, or /usr/local/bin/rlockd from the rlockd container image)";

    private static volatile Path extracted;

    private NativeBinary() {}

    /** The executable {@link RlockdServer} runs when none is given. */
    public static Path path() {
        String prop = System.getProperty(PROPERTY);
        if (prop != null && !prop.isEmpty()) {
            return checked(Paths.get(prop), "the " + PROPERTY + " system property");
        }
        String env = System.getenv(ENV);
        if (env != null && !env.isEmpty()) {
            return checked(Paths.get(env), "the " + ENV + " environment variable");
        }
        Path p = extracted;
        if (p == null) {
            synchronized (NativeBinary.class) {
                if (extracted == null) {
                    extracted = NativeBinary.class.getResource(RESOURCE) != null ? extractTo(cacheDir()) : onPath(System.getenv("PATH"));
                }
                p = extracted;
            }
        }
        return p;
    }

    static String platform(String osName, String osArch) {
        String os = osName.toLowerCase(java.util.Locale.ROOT);
        os = os.startsWith("linux") ? "linux" : os.startsWith("mac") ? "darwin" : os.startsWith("windows") ? "windows" : os;
        String arch = osArch.toLowerCase(java.util.Locale.ROOT);
        arch = arch.equals("amd64") || arch.equals("x86_64") ? "x86_64" : arch.equals("arm64") ? "aarch64" : arch;
        return os + "-" + arch;
    }

    /** {@code rlockd} on PATH, for a platform the jar carries no binary for. */
    static Path onPath(String path) {
        if (path != null) {
            for (String dir : path.split(java.io.File.pathSeparator)) {
                if (dir.isEmpty()) {
                    continue;
                }
                Path p = Paths.get(dir, "rlockd");
                if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                    return p;
                }
            }
        }
        throw new RlockdException("rlockd binary not found: this jar carries none for " + PLATFORM
                + " and there is no rlockd on PATH; " + HOW_TO_GET);
    }

    static Path checked(Path p, String source) {
        if (!Files.isRegularFile(p)) {
            throw new RlockdException("rlockd binary not found: " + p + " (from " + source + ")");
        }
        if (!Files.isExecutable(p)) {
            throw new RlockdException("rlockd binary is not executable: " + p + " (from " + source + ")");
        }
        return p;
    }

    static Path cacheDir() {
        String dir = System.getProperty("rlockd.cache.dir");
        if (dir != null && !dir.isEmpty()) {
            return Paths.get(dir);
        }
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isEmpty() ? Paths.get(xdg) : Paths.get(System.getProperty("user.home"), ".cache");
        return base.resolve("rlockd");
    }

    /** Extracts the packed binary under {@code cache} (or reuses the copy there) and returns its path. */
    static Path extractTo(Path cache) {
        Properties meta = new Properties();
        try (InputStream in = NativeBinary.class.getResourceAsStream(RESOURCE + ".properties")) {
            if (in != null) {
                meta.load(in);
            }
        } catch (IOException e) {
            meta.clear();
        }
        String known = meta.getProperty("sha256", "");
        long size = parseLong(meta.getProperty("size"));
        if (known.length() == 64 && size > 0) {
            Path target = cache.resolve(known).resolve("rlockd");
            try {
                if (Files.isRegularFile(target) && Files.size(target) == size && Files.isExecutable(target)) {
                    return target;
                }
            } catch (IOException e) {
                // extract it again below
            }
        }
        byte[] bytes;
        try (InputStream in = NativeBinary.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new RlockdException("rlockd binary not found: this jar carries none (" + RESOURCE + "); "
                        + HOW_TO_GET);
            }
            bytes = in.readAllBytes();
        } catch (IOException e) {
            throw new RlockdException("cannot read the packed rlockd binary", null, e);
        }
        String sha = sha256(bytes);
        if (!known.isEmpty() && !known.equals(sha)) {
            throw new RlockdException("the packed rlockd binary does not match its recorded hash (" + RESOURCE + ")");
        }
        Path dir = cache.resolve(sha);
        Path target = dir.resolve("rlockd");
        try {
            if (Files.isRegularFile(target) && sha.equals(sha256(Files.readAllBytes(target)))) {
                if (!Files.isExecutable(target)) {
                    Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwxr-xr-x"));
                }
                return target;
            }
            Files.createDirectories(dir);
            Path tmp = Files.createTempFile(dir, "rlockd-", ".tmp");
            try {
                Files.write(tmp, bytes);
                Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
                try {
                    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
                }
            } finally {
                Files.deleteIfExists(tmp);
            }
            if (Files.size(target) != bytes.length) {
                throw new RlockdException("extracted rlockd binary has the wrong size: " + target);
            }
            return target;
        } catch (IOException e) {
            throw new RlockdException("cannot extract the rlockd binary to " + dir, null, e);
        }
    }

    private static long parseLong(String s) {
        try {
            return s == null ? -1 : Long.parseLong(s.trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static String sha256(byte[] bytes) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(bytes);
            StringBuilder sb = new StringBuilder(64);
            for (byte b : d) {
                sb.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
            }
            return sb.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
