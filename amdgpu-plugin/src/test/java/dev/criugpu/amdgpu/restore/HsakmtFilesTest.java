package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.api.CriuException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** hsakmt's shared memory file and semaphore come back where an image recorded them, as upstream does. */
class HsakmtFilesTest {
    @TempDir
    Path shm;

    @AfterEach
    void tearDown() {
        KfdSimulator.reset();
    }

    static CriuKfd kfd(long size, int magic) {
        return CriuKfd.newBuilder().setPid(1).setNumOfGpus(0).setNumOfCpus(0).setNumOfBos(0).setNumOfObjects(0)
                .setSharedMemSize(size).setSharedMemMagic(magic).setPrivData(com.google.protobuf.ByteString.EMPTY).build();
    }

    void recreate(List<CriuKfd> kfds) {
        KfdSimulator.setShmDir(shm);
        HsakmtFiles.recreate(KfdSimulator.syscalls(), shm.resolve("hsakmt_shared_mem"), kfds);
    }

    @Test
    void missingFilesAreCreatedWithTheRecordedSizeAndMagic() throws Exception {
        recreate(List.of(kfd(0, 0), kfd(8192, 0x12345678)));
        Path file = shm.resolve("hsakmt_shared_mem");
        assertEquals(8192, Files.size(file));
        assertEquals(0x12345678, ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.nativeOrder()).getInt());
        assertTrue(Files.getPosixFilePermissions(file).contains(PosixFilePermission.OWNER_WRITE));
        byte[] sem = Files.readAllBytes(shm.resolve("sem." + HsakmtFiles.SEMAPHORE));
        assertEquals(1, ByteBuffer.wrap(sem).order(ByteOrder.nativeOrder()).getInt(), "a new semaphore holds 1");
    }

    @Test
    void anExistingFileIsLeftAlone() throws Exception {
        Path file = shm.resolve("hsakmt_shared_mem");
        byte[] before = {9, 9, 9, 9, 9, 9};
        Files.write(file, before);
        recreate(List.of(kfd(8192, 0x12345678)));
        assertArrayEquals(before, Files.readAllBytes(file));
        assertTrue(Files.exists(shm.resolve("sem." + HsakmtFiles.SEMAPHORE)), "the semaphore is still opened");
    }

    @Test
    void imagesWithoutTheFileCreateNothing() throws Exception {
        recreate(List.of(kfd(0, 0)));
        try (var s = Files.list(shm)) {
            assertEquals(List.of(), s.toList());
        }
    }

    @Test
    void aSemaphoreThatCannotBeCreatedRefusesTheRestore() {
        KfdSimulator.setShmDir(shm.resolve("gone"));
        CriuException e = assertThrows(CriuException.class, () ->
                HsakmtFiles.recreate(KfdSimulator.syscalls(), shm.resolve("hsakmt_shared_mem"), List.of(kfd(4096, 1))));
        assertEquals("cannot create hsakmt's semaphore hsakmt_semaphore: sem_open hsakmt_semaphore failed: ENOENT (errno 2)",
                e.getMessage());
        assertTrue(Files.exists(shm.resolve("hsakmt_shared_mem")));
        assertFalse(Files.exists(shm.resolve("gone")));
    }
    @Test
    void aRecordedSizeBeyondWhatHsakmtUsesIsRefusedAndNothingIsCreated() throws Exception {
        KfdSimulator.setShmDir(shm);
        Path file = shm.resolve("hsakmt_shared_mem");
        CriuException e = assertThrows(CriuException.class, () -> HsakmtFiles.recreate(KfdSimulator.syscalls(), file,
                List.of(kfd(8, 1), kfd(-1L, 0x12345678))));
        assertEquals("a KFD image of pid 1 records hsakmt's shared memory file " + file + " as 18446744073709551615"
                + " bytes, more than the 65536 hsakmt uses at most; refused", e.getMessage());
        try (var s = Files.list(shm)) {
            assertEquals(List.of(), s.toList(), "neither the file nor the semaphore");
        }
    }

    @Test
    void theFileIsRootsAloneToWriteAndAPlantedSymlinkIsNotFollowed() throws Exception {
        recreate(List.of(kfd(8, 0x12345678)));
        assertEquals(java.util.Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
                PosixFilePermission.GROUP_READ, PosixFilePermission.OTHERS_READ),
                Files.getPosixFilePermissions(shm.resolve("hsakmt_shared_mem")), "0644 at most");

        Path other = shm.resolve("other");
        Files.createDirectory(other);
        Path target = other.resolve("target");
        Files.createSymbolicLink(other.resolve("hsakmt_shared_mem"), target);
        KfdSimulator.setShmDir(other);
        HsakmtFiles.recreate(KfdSimulator.syscalls(), other.resolve("hsakmt_shared_mem"), List.of(kfd(8, 1)));
        assertFalse(Files.exists(target), "the link's target was not created");
    }
}
