package dev.criugpu.api;

/** The criu command a plugin instance serves; numbers are criu's CR_PLUGIN_STAGE__*. */
public enum Stage {
    DUMP(0), PRE_DUMP(1), RESTORE(2);

    public final int id;

    Stage(int id) {
        this.id = id;
    }

    public static Stage of(int id) {
        for (Stage s : values()) {
            if (s.id == id) return s;
        }
        throw new IllegalArgumentException("unknown criu plugin stage " + id);
    }
}
