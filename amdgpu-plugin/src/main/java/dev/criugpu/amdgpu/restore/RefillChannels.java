package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.api.plan.Fdstore;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One socket pair per KFD image, made before criu forks: the task end goes into criu's fdstore (the plan's
 * SEND_FDS step fetches it in whichever task restores the image, in any namespace), the main end stays here for
 * the {@link RefillServer}. A pair per image keeps requests of concurrent tasks apart and tells which image a
 * broken request was for.
 */
public final class RefillChannels implements AutoCloseable {
    private final Fdstore store;
    private final Map<Integer, Integer> mainEnds = new LinkedHashMap<>();

    public RefillChannels(Fdstore store) {
        this.store = store;
    }

    /** The fdstore id of the task end for KFD image {@code fileId} (made on first use). */
    public synchronized int fdstoreIdFor(int fileId) {
        if (mainEnds.containsKey(fileId)) throw new IllegalStateException("channel for file " + fileId + " exists");
        int[] pair = UnixSockets.pair();
        try {
            int id = store.add(pair[1]);
            mainEnds.put(fileId, pair[0]);
            return id;
        } catch (RuntimeException e) {
            UnixSockets.close(pair[0]);
            throw e;
        } finally {
            UnixSockets.close(pair[1]); // the fdstore holds its own copy
        }
    }

    /** KFD image id → this process's end. */
    public synchronized Map<Integer, Integer> mainEnds() {
        return Map.copyOf(mainEnds);
    }

    @Override
    public synchronized void close() {
        UnixSockets.closeAll(mainEnds.values().stream().mapToInt(Integer::intValue).toArray());
        mainEnds.clear();
    }
}
