package dev.criugpu.api;

import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;

/** The plugins on the class path ({@code META-INF/services/dev.criugpu.api.CriuPlugin}). */
public final class Plugins {
    private Plugins() {
    }

    public static List<CriuPlugin> all() {
        return ServiceLoader.load(CriuPlugin.class, Plugins.class.getClassLoader()).stream()
                .map(ServiceLoader.Provider::get).toList();
    }

    public static Optional<CriuPlugin> named(String name) {
        return all().stream().filter(p -> p.name().equals(name)).findFirst();
    }
}
