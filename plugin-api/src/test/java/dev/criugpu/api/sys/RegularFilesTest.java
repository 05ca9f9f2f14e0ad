package dev.criugpu.api.sys;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Only regular files are opened; a FIFO is refused without blocking, a symlink without being followed. */
class RegularFilesTest {
    @TempDir
    Path dir;

    @Test
    void aRegularFileIsRead() throws IOException {
        Path f = Files.writeString(dir.resolve("a.img"), "payload");
        try (FileChannel ch = RegularFiles.openForReading(f)) {
            assertEquals("payload", read(ch));
        }
    }

    @Test
    void aFifoIsRefusedAtOnceWithoutAWriter() throws Exception {
        Path fifo = dir.resolve("amdgpu-kfd-1.img");
        mkfifo(fifo);
        // a blocking open would never return here: nobody writes to the FIFO
        RegularFiles.NotRegularFileException e = assertThrows(RegularFiles.NotRegularFileException.class,
                () -> RegularFiles.openForReading(fifo));
        assertEquals("is a FIFO, not a regular file", e.getMessage());
    }

    @Test
    void aSymlinkIsNotFollowed() throws IOException {
        Path target = Files.writeString(dir.resolve("secret"), "not yours");
        Path link = Files.createSymbolicLink(dir.resolve("inventory.img"), target);
        RegularFiles.NotRegularFileException e = assertThrows(RegularFiles.NotRegularFileException.class,
                () -> RegularFiles.openForReading(link));
        assertEquals("is a symbolic link, not a regular file", e.getMessage());
    }

    @Test
    void aDirectoryAndAMissingFileAreRefused() throws IOException {
        Path sub = Files.createDirectory(dir.resolve("core-1.img"));
        assertEquals("is a directory, not a regular file",
                assertThrows(RegularFiles.NotRegularFileException.class, () -> RegularFiles.openForReading(sub)).getMessage());
        assertThrows(NoSuchFileException.class, () -> RegularFiles.openForReading(dir.resolve("none.img")));
    }

    @Test
    void whatIsReadIsTheFileThatWasChecked() throws IOException {
        Path f = Files.writeString(dir.resolve("pages.img"), "checked");
        try (FileChannel ch = RegularFiles.openForReading(f)) {
            Path other = Files.writeString(dir.resolve("other"), "swapped in");
            Files.move(other, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            assertEquals("checked", read(ch));
        }
    }

    static void mkfifo(Path p) throws IOException, InterruptedException {
        Process mk = new ProcessBuilder("mkfifo", p.toString()).inheritIO().start();
        assertEquals(0, mk.waitFor());
    }

    private static String read(FileChannel ch) throws IOException {
        ByteBuffer b = ByteBuffer.allocate((int) ch.size());
        while (b.hasRemaining() && ch.read(b) >= 0) {
        }
        return new String(b.array(), StandardCharsets.UTF_8);
    }
}
