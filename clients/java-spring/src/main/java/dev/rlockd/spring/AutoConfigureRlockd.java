package dev.rlockd.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Starts rlockd for the test's Spring application context and supplies the context's
 * {@code RedisConnectionDetails}, so that Spring Data Redis ({@code StringRedisTemplate},
 * Lettuce or Jedis) and Redisson's Spring Boot starter connect to it with no
 * {@code spring.data.redis.*} property:
 *
 * <pre>
 * &#64;SpringBootTest
 * &#64;AutoConfigureRlockd
 * class OrdersTest { &#64;Autowired StringRedisTemplate redis; ... }
 * </pre>
 *
 * One server per cached context: test classes with the same settings (and otherwise the
 * same configuration) share the context and its server; it stops when the context closes.
 * The server (an {@code RlockdServer}, {@code RlockdReplicated} or {@code RlockdCluster})
 * is a bean too, for the test control ({@code advanceClock}, {@code locks}...).
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
public @interface AutoConfigureRlockd {

    /** What the context connects to. */
    enum Topology {
        /** One server: {@code RedisConnectionDetails.getStandalone()}. */
        STANDALONE,
        /** A primary, {@link #replicas()} replicas and {@link #sentinels()} Sentinels watching "mymaster". */
        SENTINEL,
        /** A Redis Cluster of {@link #primaries()} primaries with {@link #replicas()} replicas each. */
        CLUSTER
    }

    Topology topology() default Topology.STANDALONE;

    /** Cluster primaries (CLUSTER). */
    int primaries() default 3;

    /** Replicas: of the primary (SENTINEL), of each primary (CLUSTER). */
    int replicas() default 0;

    /** Sentinels (SENTINEL). */
    int sentinels() default 3;

    /** The password clients must give ({@code --requirepass}); none when empty. */
    String password() default "";

    /** More command-line options, e.g. {@code {"--redis-version", "8.2.3"}}. */
    String[] args() default {};
}
