package dev.rlockd.redisson;

import dev.rlockd.RlockdServer;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Redisson pointed at an rlockd server. Needs Redisson on the test classpath (this
 * library does not bring it: the version is the user's).
 *
 * <pre>{@code
 * RedissonClient redisson = RlockdRedisson.client(srv);
 * }</pre>
 */
public final class RlockdRedisson {
    private RlockdRedisson() {}

    /** A single-server {@link Config} for the server: its address and password, small pools for tests. */
    public static Config config(RlockdServer server) {
        Config config = new Config();
        config.useSingleServer()
                .setAddress("redis://" + server.host() + ":" + server.port())
                .setPassword(server.password())
                .setConnectionMinimumIdleSize(2)
                .setConnectionPoolSize(8)
                .setSubscriptionConnectionMinimumIdleSize(1);
        return config;
    }

    /** {@code Redisson.create(config(server))}; shut it down after the test. */
    public static RedissonClient client(RlockdServer server) {
        return Redisson.create(config(server));
    }
}
