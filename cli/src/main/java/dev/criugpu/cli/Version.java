package dev.criugpu.cli;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** The build's version, from criu-gpu-version.properties (filtered by Maven). */
final class Version {
    private Version() {
    }

    static String get() {
        try (InputStream in = Version.class.getResourceAsStream("/criu-gpu-version.properties")) {
            Properties p = new Properties();
            if (in != null) p.load(in);
            return p.getProperty("version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }
}
