package dev.rlockd.spring;

import java.util.List;
import org.springframework.test.context.ContextConfigurationAttributes;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.ContextCustomizerFactory;
import org.springframework.test.context.TestContextAnnotationUtils;

/**
 * Registered in META-INF/spring.factories: gives a test class annotated (directly, on an
 * enclosing class, or through a meta-annotation) with {@link AutoConfigureRlockd} the
 * customizer that starts rlockd for its context.
 */
public final class RlockdContextCustomizerFactory implements ContextCustomizerFactory {

    @Override
    public ContextCustomizer createContextCustomizer(Class<?> testClass,
            List<ContextConfigurationAttributes> configAttributes) {
        AutoConfigureRlockd a = TestContextAnnotationUtils.findMergedAnnotation(testClass, AutoConfigureRlockd.class);
        return a == null ? null : new RlockdContextCustomizer(RlockdContextCustomizer.Settings.of(a));
    }
}
