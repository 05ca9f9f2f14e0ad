package dev.criugpu.cuda;

import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.api.sys.Syscalls;
import dev.criugpu.cuda.image.CudaTaskEntry;
import dev.criugpu.cuda.image.CudaTaskImages;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.inventory.ImageIO;
import dev.criugpu.inventory.images.PstreeEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * DESIGN rule 11: a restore's init reads pstree.img, the core images and our records through criu's images-dir fd.
 * Whoever owns a parent of the images directory can move it and put a symlink to files of their own under its path
 * after criu opened it; the readers still read what criu's fd leads to.
 */
class RestoreImagesByFdTest {
    @TempDir
    Path tmp;

    private static CudaTaskEntry record(int pid) {
        return CudaTaskEntry.newBuilder().setPid(pid).setInitialState(CudaState.RUNNING.value).setBackend("driver").build();
    }

    @Test
    void theImagesAreReadThroughCriusFdAfterTheirPathWasRedirected() throws Exception {
        Path images = Files.createDirectory(tmp.resolve("images"));
        CudaTaskImages.write(images, record(42));
        ImageIO.writeEntries(images.resolve("pstree.img"), ImageIO.PSTREE_MAGIC,
                List.of(PstreeEntry.newBuilder().setPid(42).setPpid(0).setPgid(42).setSid(42).build()));
        int fd = Syscalls.libc().open(images.toString(), Syscalls.O_RDONLY | Syscalls.O_DIRECTORY | Syscalls.O_CLOEXEC);
        try {
            ImageFiles.useDirectoryFd(images, fd); // what NativeCriuServices does with criu's fd
            Files.move(images, tmp.resolve("moved"));
            Path planted = Files.createDirectory(tmp.resolve("planted"));
            CudaTaskImages.write(planted, record(7));
            ImageIO.writeEntries(planted.resolve("pstree.img"), ImageIO.PSTREE_MAGIC,
                    List.of(PstreeEntry.newBuilder().setPid(7).setPpid(0).setPgid(7).setSid(7).build()));
            Files.createSymbolicLink(images, planted);

            RestoreImages read = RestoreImages.read(images);
            assertEquals(List.of(42), read.records().stream().map(CudaTaskEntry::getPid).toList());
            assertNull(read.resumedError());
            assertEquals(Set.of(42), read.resumed());
            assertTrue(read.inherited().isEmpty());
            assertEquals(List.of(images.resolve("cuda-plugin-42.img")), CudaTaskImages.files(images));
        } finally {
            Syscalls.libc().close(fd);
        }
    }
}
