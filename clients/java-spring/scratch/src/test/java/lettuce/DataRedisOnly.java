package lettuce;

import org.redisson.spring.starter.RedissonAutoConfigurationV2;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Configuration;

/**
 * Spring Data Redis on its own (Lettuce, as an application without Redisson's starter has
 * it): Spring Boot's auto-configuration without Redisson's, outside the application's package
 * (none of its beans). The tests in this package check that Spring Boot's Redis
 * auto-configuration builds its connection factory from the RedisConnectionDetails the
 * annotation supplies, for each topology.
 */
@Configuration(proxyBeanMethods = false)
@EnableAutoConfiguration(exclude = RedissonAutoConfigurationV2.class)
class DataRedisOnly {}
