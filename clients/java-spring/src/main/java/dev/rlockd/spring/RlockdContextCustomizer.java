package dev.rlockd.spring;

import dev.rlockd.RlockdCluster;
import dev.rlockd.RlockdReplicated;
import dev.rlockd.RlockdServer;
import java.util.List;
import java.util.function.Supplier;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.MergedContextConfiguration;

/**
 * Starts the server {@link AutoConfigureRlockd} asks for when the context is created, and
 * registers it and a {@link RedisConnectionDetails} for it as beans; the server stops with
 * the context. Equal settings make equal customizers, so that Spring's context cache
 * shares one context, and one server, between test classes that ask for the same.
 */
final class RlockdContextCustomizer implements ContextCustomizer {

    /** The annotation's values: the key of the context cache. */
    record Settings(AutoConfigureRlockd.Topology topology, int primaries, int replicas, int sentinels,
            String password, List<String> args) {

        static Settings of(AutoConfigureRlockd a) {
            return new Settings(a.topology(), a.primaries(), a.replicas(), a.sentinels(), a.password(),
                    List.of(a.args()));
        }
    }

    private final Settings settings;

    RlockdContextCustomizer(Settings settings) {
        this.settings = settings;
    }

    @Override
    public void customizeContext(ConfigurableApplicationContext context, MergedContextConfiguration config) {
        ConfigurableListableBeanFactory beans = context.getBeanFactory();
        if (!(beans instanceof BeanDefinitionRegistry registry)) {
            throw new IllegalStateException("@AutoConfigureRlockd needs a context whose bean factory is a BeanDefinitionRegistry");
        }
        RlockdServer.Builder b = RlockdServer.builder();
        if (!settings.password().isEmpty()) {
            b.password(settings.password());
        }
        if (!settings.args().isEmpty()) {
            b.arg(settings.args().toArray(String[]::new));
        }
        switch (settings.topology()) {
            case STANDALONE -> {
                RlockdServer server = b.start();
                register(registry, "rlockdServer", RlockdServer.class, server);
                register(registry, "rlockdRedisConnectionDetails", RedisConnectionDetails.class,
                        RlockdConnectionDetails.standalone(server));
            }
            case SENTINEL -> {
                RlockdReplicated r = b.startReplicated(settings.replicas(), settings.sentinels());
                register(registry, "rlockdReplicated", RlockdReplicated.class, r);
                register(registry, "rlockdRedisConnectionDetails", RedisConnectionDetails.class,
                        RlockdConnectionDetails.sentinel(r, settings.password()));
            }
            case CLUSTER -> {
                RlockdCluster c = b.clusterReplicas(settings.replicas()).startCluster(settings.primaries());
                register(registry, "rlockdCluster", RlockdCluster.class, c);
                register(registry, "rlockdRedisConnectionDetails", RedisConnectionDetails.class,
                        RlockdConnectionDetails.cluster(c, settings.password()));
            }
            default -> throw new IllegalArgumentException("topology " + settings.topology());
        }
    }

    private static <T> void register(BeanDefinitionRegistry registry, String name, Class<T> type, T bean) {
        Supplier<T> supplier = () -> bean;
        RootBeanDefinition def = new RootBeanDefinition(type, supplier);
        if (bean instanceof AutoCloseable) {
            def.setDestroyMethodName("close"); // the server stops when the context closes
        }
        registry.registerBeanDefinition(name, def);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RlockdContextCustomizer other && settings.equals(other.settings);
    }

    @Override
    public int hashCode() {
        return settings.hashCode();
    }
}
