package example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rlockd.RlockdServer;
import dev.rlockd.spring.AutoConfigureRlockd;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.TestContextManager;

/**
 * Spring's context cache shares one server per cached context: two test classes with the
 * same settings get the same server; other settings, another context and another server.
 */
class ContextCacheTest {

    @SpringBootTest
    @AutoConfigureRlockd
    static class First {
        @Autowired
        RlockdServer server;
    }

    @SpringBootTest
    @AutoConfigureRlockd
    static class Second {
        @Autowired
        RlockdServer server;
    }

    @SpringBootTest
    @AutoConfigureRlockd(args = {"--redis-version", "8.2.3"})
    static class Other {
        @Autowired
        RlockdServer server;
    }

    private static <T> T prepared(Class<T> type) throws Exception {
        T instance = type.getDeclaredConstructor().newInstance();
        new TestContextManager(type).prepareTestInstance(instance);
        return instance;
    }

    @Test
    void oneServerPerCachedContext() throws Exception {
        RlockdServer first = prepared(First.class).server;
        RlockdServer second = prepared(Second.class).server;
        RlockdServer other = prepared(Other.class).server;
        assertThat(second).isSameAs(first);
        assertThat(other).isNotSameAs(first);
        assertThat(other.port()).isNotEqualTo(first.port());
        assertThat(first.isRunning()).isTrue();
        assertThat(other.isRunning()).isTrue();
    }
}
