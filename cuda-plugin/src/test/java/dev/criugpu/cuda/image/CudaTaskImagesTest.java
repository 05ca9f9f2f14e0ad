package dev.criugpu.cuda.image;

import dev.criugpu.inventory.ImageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CudaTaskImagesTest {
    static CudaTaskEntry entry(int pid) {
        return CudaTaskEntry.newBuilder().setPid(pid).setInitialState(0).setBackend("driver").setDriverApi(13000)
                .addGpus(CudaGpuEntry.newBuilder().setUuid("GPU-eea0d83f-ebcd-ac27-6b3e-bec2a19724e6")
                        .setModel("NVIDIA H100 80GB HBM3").setMinor(0))
                .build();
    }

    @Test
    void writesFramedRecordsAndReadsThemBack(@TempDir Path dir) throws IOException {
        CudaTaskImages.write(dir, entry(77));
        CudaTaskImages.write(dir, entry(5));
        Files.writeString(dir.resolve("core-77.img"), "not ours");
        assertEquals(List.of(entry(5), entry(77)), CudaTaskImages.readAll(dir));
        ByteBuffer head = ByteBuffer.wrap(Files.readAllBytes(dir.resolve("cuda-plugin-77.img"))).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(0x54564319, head.getInt());
        assertEquals(CudaTaskImages.MAGIC, head.getInt());
        assertEquals(entry(77).getSerializedSize(), head.getInt());
    }

    @Test
    void aRecordUnderAnotherPidsNameIsRefused(@TempDir Path dir) throws IOException {
        CudaTaskImages.write(dir, entry(77));
        Files.move(dir.resolve("cuda-plugin-77.img"), dir.resolve("cuda-plugin-78.img"));
        var e = assertThrows(ImageException.class, () -> CudaTaskImages.readAll(dir));
        assertTrue(e.getMessage().contains("cuda-plugin-78.img") && e.getMessage().contains("holds pid 77"), e.getMessage());
    }
}
