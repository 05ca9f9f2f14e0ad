package dev.criugpu.it;

/**
 * A copy of this build's plugin dir inside a container, at another path, for tests that change it (file modes, an
 * extra jar, extra JVM options) without touching the build's. Its java/jvm.options names the copy's files; the AOT
 * cache, made for the build's path, is left out.
 */
public final class PluginDirCopy {
    public static final String OPTIONS = "java/jvm.options";
    private final CriuContainer criu;
    public final String dir;

    private PluginDirCopy(CriuContainer criu, String dir) {
        this.criu = criu;
        this.dir = dir;
    }

    /** Copies the mounted plugin dir to {@code dir} (owner and modes kept). */
    public static PluginDirCopy make(CriuContainer criu, String dir) {
        criu.sh("rm -rf " + dir + " && cp -a " + CriuContainer.PLUGIN_DIR + " " + dir
                + " && sed -i -e 's|" + CriuContainer.PLUGIN_DIR + "|" + dir + "|g' -e '/^-XX:AOTCache=/d' "
                + dir + "/" + OPTIONS).orFail();
        return new PluginDirCopy(criu, dir);
    }

    /** {@code dir/relative}. */
    public String path(String relative) {
        return dir + "/" + relative;
    }

    /** Adds JVM option lines to java/jvm.options. */
    public PluginDirCopy withOptions(String... options) {
        for (String o : options) criu.sh("echo '" + o + "' >> " + path(OPTIONS)).orFail();
        return this;
    }

    /** Puts a jar (mode 0644) into java/lib, first on the class path. */
    public PluginDirCopy withJarFirst(String name, byte[] jar) {
        criu.writeBytes(path("java/lib/" + name), jar, 0644);
        criu.sh("sed -i 's|^-Djava.class.path=|-Djava.class.path=" + path("java/lib/" + name) + ":|' "
                + path(OPTIONS)).orFail();
        return this;
    }

    public void chmod(String mode, String relative) {
        criu.exec("chmod", mode, path(relative)).orFail();
    }
}
