package dev.criugpu.cuda;

import dev.criugpu.cuda.image.CudaInheritedEntry;
import dev.criugpu.cuda.image.CudaTaskEntry;
import dev.criugpu.cuda.image.CudaTaskImages;
import dev.criugpu.cuda.inherited.InheritedDevices;
import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.TreeTasks;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What a CUDA restore's init reads from the images directory: the NVIDIA files tasks inherited, our task records,
 * and the tasks criu resumes ({@code resumed}), or why pstree.img could not say ({@code resumedError}: whether that
 * fails the restore depends on the inventory, which init knows).
 */
record RestoreImages(Path dir, Optional<CudaInheritedEntry> inherited, List<CudaTaskEntry> records, Set<Integer> resumed,
                     ImageException resumedError) {

    /** Fails, naming the file, when the inherited files or a task record cannot be read. */
    static RestoreImages read(Path dir) throws ImageException {
        Optional<CudaInheritedEntry> inherited = InheritedDevices.read(dir);
        List<CudaTaskEntry> records = CudaTaskImages.readAll(dir);
        try {
            return new RestoreImages(dir, inherited, records, TreeTasks.resumed(dir), null);
        } catch (ImageException e) {
            return new RestoreImages(dir, inherited, records, null, e);
        }
    }
}
