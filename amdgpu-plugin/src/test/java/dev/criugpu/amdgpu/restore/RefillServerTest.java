package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.bindings.socket_h;
import dev.criugpu.amdgpu.sys.UnixSockets;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The refill poller over more channels than an int has bits: each request is served on its own channel. */
class RefillServerTest {
    private static final int CHANNELS = 40;

    @Test
    void aRequestOnTheThirtyFifthOfFortyChannelsIsServedThere() throws Exception {
        Map<Integer, Integer> mainEnds = new LinkedHashMap<>();
        Map<Integer, Integer> taskEnds = new LinkedHashMap<>();
        for (int file = 0; file < CHANNELS; file++) {
            int[] pair = UnixSockets.pair();
            mainEnds.put(file, pair[0]);
            taskEnds.put(file, pair[1]);
        }
        CompletableFuture<RefillRequestReader.Refused> refused = new CompletableFuture<>();
        RefillServer server = new RefillServer(mainEnds, r -> refused.completeExceptionally(new AssertionError(r)),
                refused::complete);
        try {
            server.start();
            send(taskEnds.get(35), 35, 0x0bad_0bad); // a head with a wrong magic: refused, naming its channel's image
            // a bound against a hang only: with an aliased mask the poller served channel 3 instead, and waited there
            RefillRequestReader.Refused r = refused.get(60, TimeUnit.SECONDS);
            assertEquals(35, r.fileId());
            assertEquals("amdgpu-kfd-35.img: refill request from pid 4242 has magic 0x0bad0bad, not 0x31465241",
                    r.getMessage());
        } finally {
            server.close();
            mainEnds.values().forEach(UnixSockets::close);
            taskEnds.values().forEach(UnixSockets::close);
        }
    }

    private static void send(int fd, int fileId, int magic) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment head = a.allocateFrom(JAVA_BYTE, RefillProtocol.request(fileId, new int[0]));
            head.set(JAVA_INT, RefillProtocol.MAGIC_AT, magic);
            head.set(JAVA_INT, RefillProtocol.PID_AT, 4242);
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            assertEquals(head.byteSize(), socket_h.send(st, fd, head, head.byteSize(), socket_h.MSG_NOSIGNAL()));
        }
    }
}
