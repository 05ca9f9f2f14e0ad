package dev.criugpu.cuda.agent;

/**
 * A task's restore thread that runs with the signals criu's side blocks while it runs, and the mask the thread had
 * before: unless criu says it gave the mask back itself, the agent does once criu is gone.
 */
record BlockedThread(int pid, int tid, long savedMask) {

    /** The watch message's form: {@code blocked PID TID MASK}, the mask in hex. */
    static String line(int pid, int tid, long savedMask) {
        return "blocked " + pid + " " + tid + " " + Long.toHexString(savedMask);
    }

    static BlockedThread parse(String[] f) {
        if (f.length != 4 || !f[0].equals("blocked")) throw new IllegalArgumentException("not 'blocked PID TID MASK'");
        return new BlockedThread(Integer.parseInt(f[1]), Integer.parseInt(f[2]), Long.parseUnsignedLong(f[3], 16));
    }
}
