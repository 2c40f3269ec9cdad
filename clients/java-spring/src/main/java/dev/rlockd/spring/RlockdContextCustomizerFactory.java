package dev.rlockd.spring;

import java.util.List;
import org.springframework.core.SpringProperties;
import org.springframework.test.context.ContextConfigurationAttributes;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.ContextCustomizerFactory;
import org.springframework.test.context.TestContextAnnotationUtils;

/**
 * Registered in META-INF/spring.factories: gives a test class annotated (directly, on an
 * enclosing class, or through a meta-annotation) with {@link AutoConfigureRlockd} the
 * customizer that starts rlockd for its context. With {@value #AUTO} set to {@code true}
 * (in a {@code spring.properties} file on the test classpath, or as a system property),
 * every test context without the annotation gets one as {@code @AutoConfigureRlockd} with
 * its defaults would: no annotation at all.
 */
public final class RlockdContextCustomizerFactory implements ContextCustomizerFactory {

    /** The flag that gives unannotated test contexts a standalone server. */
    public static final String AUTO = "dev.rlockd.spring.auto-configure";

    @AutoConfigureRlockd
    private static final class Defaults {}

    @Override
    public ContextCustomizer createContextCustomizer(Class<?> testClass,
            List<ContextConfigurationAttributes> configAttributes) {
        AutoConfigureRlockd a = TestContextAnnotationUtils.findMergedAnnotation(testClass, AutoConfigureRlockd.class);
        if (a == null && SpringProperties.getFlag(AUTO)) {
            a = Defaults.class.getAnnotation(AutoConfigureRlockd.class);
        }
        return a == null ? null : new RlockdContextCustomizer(RlockdContextCustomizer.Settings.of(a));
    }
}
