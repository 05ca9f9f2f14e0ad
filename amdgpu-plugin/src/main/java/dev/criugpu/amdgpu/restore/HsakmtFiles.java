package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.SyscallException;
import dev.criugpu.api.sys.Syscalls;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Collection;
import java.util.Set;

/**
 * libhsakmt's files in /dev/shm, which a ROCm process maps: its shared memory file (size and 4-byte magic are in the
 * KFD image) and its named semaphore {@code hsakmt_semaphore}. criu reopens both by path for the restored task's
 * mappings, so a restore where they are gone (another host, a reboot) needs them first. As upstream v4.2 does in its
 * restore: when an image recorded the shared memory file and it is missing, it is created with that size and magic;
 * then the semaphore is opened, created with value 1 if missing. Unlike upstream, root's file in the host's
 * /dev/shm is not sized by the image alone: hsakmt's file holds its 8-byte {@code struct perf_shared_table} (it
 * ftruncates it to 8), so a recorded size above {@link #MAX_SIZE} refuses the restore with one line; the file is
 * created new in one open (O_EXCL, O_NOFOLLOW: never through a symlink planted there) with mode 0644 at most (less
 * criu's umask), which is what upstream's 0666 gives under root's usual umask 022: nobody else can write root's file. Upstream does this in the restored task
 * after RESTORE; we do it in criu's main process before criu forks (so a failure refuses the restore with nothing
 * forked), which is the same /dev/shm unless a task is restored into a mount namespace of its own, where criu brings
 * back the namespace's /dev/shm with its files.
 */
final class HsakmtFiles {
    static final String SEMAPHORE = "hsakmt_semaphore";
    /** Far above hsakmt's 8 bytes, far below anything that would matter in a tmpfs. */
    static final long MAX_SIZE = 64 * 1024;
    private static final Logger log = LoggerFactory.getLogger(HsakmtFiles.class);

    private HsakmtFiles() {
    }

    /** Creates what is missing for the KFD images {@code kfds}; {@code shm} is hsakmt's shared memory file. */
    static void recreate(Syscalls sys, Path shm, Collection<CriuKfd> kfds) {
        CriuKfd recorded = kfds.stream().filter(k -> k.getSharedMemSize() != 0).findFirst().orElse(null);
        if (recorded == null) return;
        for (CriuKfd k : kfds) {
            if (Long.compareUnsigned(k.getSharedMemSize(), MAX_SIZE) > 0) {
                throw new CriuException(Errno.EINVAL, String.format("a KFD image of pid %d records hsakmt's shared"
                        + " memory file %s as %s bytes, more than the %d hsakmt uses at most; refused", k.getPid(), shm,
                        Long.toUnsignedString(k.getSharedMemSize()), MAX_SIZE));
            }
        }
        if (!Files.exists(shm, LinkOption.NOFOLLOW_LINKS)) create(shm, recorded.getSharedMemSize(), recorded.getSharedMemMagic());
        try {
            sys.openOrCreateSemaphore(SEMAPHORE, 0666, 1);
        } catch (SyscallException e) {
            throw new CriuException(Errno.EACCES, "cannot create hsakmt's semaphore " + SEMAPHORE + ": " + e.getMessage(), e);
        }
    }

    private static void create(Path shm, long size, int magic) {
        try {
            try (FileChannel f = FileChannel.open(shm, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                    LinkOption.NOFOLLOW_LINKS), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-r--r--")))) {
                // as upstream's ftruncate(size) then write(magic): zeros of the recorded size, the magic first
                if (size > 4) f.write(ByteBuffer.allocate(1), size - 1);
                f.write(ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(magic).flip(), 0);
                f.truncate(size);
            }
            log.info("{} was missing: created it ({} bytes, magic 0x{}) as the image recorded it", shm, size,
                    Integer.toHexString(magic));
        } catch (FileAlreadyExistsException e) {
            // created meanwhile by someone else: theirs is as good
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, "cannot create " + shm + " (" + size + " bytes, as the image recorded it): "
                    + e.getMessage(), e);
        }
    }
}
