package dev.rlockd.testcontainers;

import dev.rlockd.RlockdServer;
import org.testcontainers.lifecycle.Startable;
import org.testcontainers.utility.DockerImageName;

/**
 * The shape of {@code com.redis.testcontainers.RedisContainer} (testcontainers-redis),
 * started without Docker: switching a test is its import line. It is a Testcontainers
 * {@link Startable}, so {@code @Testcontainers} with an {@code @Container} field starts and
 * stops it, as does {@code start()}/{@code stop()} or try-with-resources. The image name is
 * taken and ignored (no image is run: an rlockd process answers in its place);
 * {@link #getServer()} is that server, with its test control.
 *
 * <p>Needs org.testcontainers:testcontainers on the test classpath (the user's, as with the
 * module it replaces).
 */
public class RedisContainer implements Startable {

    public static final DockerImageName DEFAULT_IMAGE_NAME = DockerImageName.parse("redis");

    public static final String DEFAULT_TAG = "latest";

    /** The port a Redis container exposes, which {@link #getMappedPort(int)} maps. */
    public static final int REDIS_PORT = 6379;

    private final DockerImageName image;
    private RlockdServer server;

    public RedisContainer(String dockerImageName) {
        this(DockerImageName.parse(dockerImageName));
    }

    public RedisContainer(DockerImageName dockerImageName) {
        this.image = dockerImageName;
    }

    public RedisContainer() {
        this(DEFAULT_IMAGE_NAME.withTag(DEFAULT_TAG));
    }

    @Override
    public synchronized void start() {
        if (server == null) {
            server = RlockdServer.start();
        }
    }

    @Override
    public synchronized void stop() {
        if (server != null) {
            server.close();
            server = null;
        }
    }

    public synchronized boolean isRunning() {
        return server != null && server.isRunning();
    }

    /** {@code redis://host:port}. */
    public String getRedisURI() {
        return "redis://" + getRedisHost() + ":" + getRedisPort();
    }

    public String getRedisHost() {
        return getHost();
    }

    public int getRedisPort() {
        return getFirstMappedPort();
    }

    public boolean isCluster() {
        return false;
    }

    public String getHost() {
        return running().host();
    }

    public Integer getFirstMappedPort() {
        return running().port();
    }

    public Integer getMappedPort(int originalPort) {
        if (originalPort != REDIS_PORT) {
            throw new IllegalArgumentException("Requested port (" + originalPort + ") is not mapped: only " + REDIS_PORT + " is");
        }
        return getFirstMappedPort();
    }

    public String getDockerImageName() {
        return image.asCanonicalNameString();
    }

    /** The rlockd server in the container's place. */
    public RlockdServer getServer() {
        return running();
    }

    private synchronized RlockdServer running() {
        if (server == null) {
            throw new IllegalStateException("Mapped port can only be obtained after the container is started");
        }
        return server;
    }

    @Override
    public String toString() {
        return "RedisContainer (rlockd in place of " + getDockerImageName() + ")";
    }
}
