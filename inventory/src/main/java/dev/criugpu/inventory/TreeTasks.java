package dev.criugpu.inventory;

import dev.criugpu.inventory.images.CoreEntry;
import dev.criugpu.inventory.images.PstreeEntry;

import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The tasks of a checkpoint that a restore brings back running, in pstree.img order: criu calls the late device hook
 * (RESUME_DEVICES_LATE) for exactly these, in this order. A task is left out when its core image says it was dead
 * (a zombie) or a helper; a task whose core image is missing or unreadable is kept (counted as alive).
 */
public final class TreeTasks {
    /** criu's task states (compel task-state.h): alive and stopped tasks are resumed by a restore. */
    static final int TASK_ALIVE = 1;
    static final int TASK_STOPPED = 3;

    private TreeTasks() {
    }

    /** The pids (in the checkpoint's own pid namespace) that a restore resumes. */
    public static Set<Integer> resumed(Path imagesDir) throws ImageException {
        List<PstreeEntry> tree = PstreeImage.readAndKeep(imagesDir);
        Set<Integer> pids = new LinkedHashSet<>();
        for (PstreeEntry e : tree) {
            if (resumedByCore(imagesDir.resolve("core-" + e.getPid() + ".img"))) pids.add(e.getPid());
        }
        return pids;
    }

    /** Read through the images dir's fd ({@code ImageReader}); a core that is missing or not a regular file: alive. */
    private static boolean resumedByCore(Path core) {
        try {
            CoreEntry c = ImageIO.readSingle(core, ImageMagic.CORE, CoreEntry.parser());
            if (!c.hasTc()) return true;
            int state = c.getTc().getTaskState();
            return state == TASK_ALIVE || state == TASK_STOPPED;
        } catch (ImageException e) {
            return true;
        }
    }
}
