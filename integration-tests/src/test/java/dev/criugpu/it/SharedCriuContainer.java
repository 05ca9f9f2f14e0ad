package dev.criugpu.it;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

import java.util.List;
import java.util.function.Consumer;

/**
 * One {@link CriuContainer} shared by all tests of a class: started before the first test (once
 * {@link DockerRequired} has let the class run), stopped after the last, and handed to each test method that
 * takes a {@code CriuContainer} parameter.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);
 *
 * @Test
 * void dumps(CriuContainer criu) { ... }
 * }</pre>
 */
public final class SharedCriuContainer implements BeforeAllCallback, AfterAllCallback, ParameterResolver {
    private final CriuImage image;
    private final boolean plugins;
    private final Consumer<CriuContainer> setup;
    private final List<String> volumes;
    private CriuContainer container;

    private SharedCriuContainer(CriuImage image, boolean plugins, Consumer<CriuContainer> setup, List<String> volumes) {
        this.image = image;
        this.plugins = plugins;
        this.setup = setup;
        this.volumes = volumes;
    }

    /** criu and the workloads, no plugins. */
    public static SharedCriuContainer plain(CriuImage image) {
        return new SharedCriuContainer(image, false, c -> { }, List.of());
    }

    /** criu, the workloads, and the plugin dir of this build with its JDK. */
    public static SharedCriuContainer withPlugins(CriuImage image) {
        return new SharedCriuContainer(image, true, c -> { }, List.of());
    }

    /** The same container, with {@code step} run in it once it has started. */
    public SharedCriuContainer thenRun(Consumer<CriuContainer> step) {
        return new SharedCriuContainer(image, plugins, setup.andThen(step), volumes);
    }

    /** The same container, with an anonymous Docker volume at each path given. */
    public SharedCriuContainer withVolumes(String... paths) {
        return new SharedCriuContainer(image, plugins, setup, List.of(paths));
    }

    /** The started container; for helpers outside the test methods. */
    public CriuContainer get() {
        if (container == null) throw new IllegalStateException("the " + image.tag + " container is not started");
        return container;
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        container = CriuContainer.start(image, plugins ? PluginDir.fromBuild() : null, volumes);
        setup.accept(container);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (container != null) container.close();
        container = null;
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == CriuContainer.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        return get();
    }
}
