package dev.criugpu.api.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * criu's {@code cr_plugin_desc_t} (criu-plugin.h) with {@code hookCount} hook slots, in the shape jextract
 * generates. Java never touches the descriptor (the shim owns it); the layout exists for the conformance test,
 * which checks the offsets the shim relies on against the installed criu-plugin.h.
 */
public final class cr_plugin_desc_t {
    private cr_plugin_desc_t() {
    }

    public static GroupLayout layout(int hookCount) {
        return MemoryLayout.structLayout(
                ADDRESS.withName("name"),
                ADDRESS.withName("init"),
                ADDRESS.withName("exit"),
                JAVA_INT.withName("version"),
                JAVA_INT.withName("max_hooks"),
                MemoryLayout.sequenceLayout(hookCount, ADDRESS).withName("hooks")
        ).withName("cr_plugin_desc_t");
    }

    /** CRIU_PLUGIN_GEN_VERSION(0, 2, 0): the newest descriptor version criu accepts. */
    public static final int CRIU_PLUGIN_VERSION = 0x200;
}
