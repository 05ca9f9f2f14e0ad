package dev.criugpu.it.flood;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;

/** A jar of {@link FloodPlugin}'s compiled classes, registered as a {@code dev.criugpu.api.CriuPlugin} provider. */
public final class FloodJar {
    private FloodJar() {
    }

    public static byte[] bytes() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (JarOutputStream jar = new JarOutputStream(out)) {
            String dir = FloodPlugin.class.getPackageName().replace('.', '/');
            Path classes = Path.of(FloodPlugin.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            for (String name : new String[]{"FloodPlugin.class"}) {
                jar.putNextEntry(new JarEntry(dir + "/" + name));
                jar.write(Files.readAllBytes(classes.resolve(dir).resolve(name)));
            }
            jar.putNextEntry(new JarEntry("META-INF/services/dev.criugpu.api.CriuPlugin"));
            jar.write((FloodPlugin.class.getName() + "\n").getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
        return out.toByteArray();
    }
}
