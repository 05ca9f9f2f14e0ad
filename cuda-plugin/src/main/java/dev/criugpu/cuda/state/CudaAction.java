package dev.criugpu.cuda.state;

/** The four driver actions, named as cuda-checkpoint's {@code --action} values. */
public enum CudaAction {
    LOCK("lock", "locking"),
    CHECKPOINT("checkpoint", "checkpointing"),
    RESTORE("restore", "restoring"),
    UNLOCK("unlock", "unlocking");

    public final String word;
    public final String gerund;

    CudaAction(String word, String gerund) {
        this.word = word;
        this.gerund = gerund;
    }

    public static CudaAction ofWord(String word) {
        for (CudaAction a : values()) {
            if (a.word.equals(word)) return a;
        }
        throw new IllegalArgumentException("unknown action '" + word + "' (expected lock, checkpoint, restore or unlock)");
    }
}
