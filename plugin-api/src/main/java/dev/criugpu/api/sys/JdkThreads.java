package dev.criugpu.api.sys;

import java.lang.foreign.Arena;

/** Threads the JDK starts lazily, started on purpose while a restore's bootstrap may still start threads. */
public final class JdkThreads {
    private JdkThreads() {
    }

    /** The JDK's Common-Cleaner starts with the first object it cleans, e.g. an automatic arena. */
    public static void startCommonCleaner() {
        Arena.ofAuto().allocate(1);
    }
}
