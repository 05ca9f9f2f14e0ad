package dev.criugpu.cuda.state;

/**
 * What the plugin's exit does with the processes it touched, decided from what criu will do next (criu 4.2 calls the
 * plugin exit after the post-dump script, with the dump's result only, and before it kills, resumes or leaves
 * stopped the tree).
 */
public enum DumpEnding {
    /** The tree will go on (dump failed, or criu was asked to leave it running or stopped): return every task now. */
    RESTORE_NOW,
    /**
     * criu will kill the tree unless a post-dump script (or an RPC client's notify answer) tells it to resume it:
     * leave the tasks to the CUDA agent, which returns them only if they outlive criu.
     */
    AGENT_WATCHES,
    /** Nothing was touched. */
    NOTHING;

    /**
     * @param ret criu's result as given to the plugin exit (0 = success)
     * @param touched whether any task was locked or checkpointed by us
     * @param treeSurvives criu's own options say the tree stays alive ({@code -R} or {@code -s})
     */
    public static DumpEnding decide(int ret, boolean touched, boolean treeSurvives) {
        if (!touched) return NOTHING;
        if (ret != 0 || treeSurvives) return RESTORE_NOW;
        return AGENT_WATCHES;
    }
}
