package dev.criugpu.inventory.inspect;

import dev.criugpu.inventory.InventoryPlugins;
import dev.criugpu.inventory.images.InventoryEntry;

import java.util.List;

/** {@code criu-gpu inspect --json}: the schema is documented in README.md ("inspect"). */
final class JsonReport {
    static final int SCHEMA_VERSION = 1;

    private JsonReport() {
    }

    static String render(Checkpoint c) {
        InventoryEntry inv = c.inventory();
        JsonWriter j = new JsonWriter().beginObject();
        j.name("schema").value(SCHEMA_VERSION);
        j.name("directory").value(c.dir().toAbsolutePath().normalize().toString());

        j.name("criu").beginObject();
        j.name("img_version").value(inv.getImgVersion());
        j.name("writer").value(c.writerHint());
        j.name("run_id").value(inv.hasDumpCriuRunId() ? inv.getDumpCriuRunId() : null);
        j.name("inventory").beginObject();
        if (inv.hasFdinfoPerId()) j.name("fdinfo_per_id").value(inv.getFdinfoPerId());
        if (inv.hasNsPerId()) j.name("ns_per_id").value(inv.getNsPerId());
        if (inv.hasRootCgSet()) j.name("root_cg_set").value(inv.getRootCgSet());
        if (inv.hasLsmtype()) j.name("lsmtype").value(inv.getLsmtype().name());
        if (inv.hasDumpUptime()) j.name("dump_uptime").value(inv.getDumpUptime());
        if (inv.hasPreDumpMode()) j.name("pre_dump_mode").value(inv.getPreDumpMode());
        if (inv.hasTcpClose()) j.name("tcp_close").value(inv.getTcpClose());
        if (inv.hasNetworkLockMethod()) j.name("network_lock_method").value(inv.getNetworkLockMethod());
        if (inv.hasAllowUprobes()) j.name("allow_uprobes").value(inv.getAllowUprobes());
        if (inv.hasCompress()) j.name("compress").value(inv.getCompress());
        if (inv.hasCompressBlockSize()) j.name("compress_block_size").value(inv.getCompressBlockSize());
        j.endObject();
        j.endObject();

        j.name("plugins").beginObject();
        j.name("recorded").value(c.requiredPlugins().isPresent());
        j.name("required").beginArray();
        c.requiredPlugins().ifPresent(list -> list.forEach(j::value));
        j.endArray();
        // where a CUDA dump's host copy of device memory is: "plugin" (only our cuda_plugin restores it) or "criu"
        j.name("cuda_host_copy").value(c.requiredPlugins().orElse(List.of()).contains(InventoryPlugins.HOST_COPY_FORMAT)
                ? "plugin" : "criu");
        j.endObject();

        j.name("processes").beginArray();
        for (Checkpoint.Process p : c.processes()) {
            j.beginObject();
            j.name("pid").value(p.pid());
            j.name("ppid").value(p.ppid());
            j.name("pgid").value(p.pgid());
            j.name("sid").value(p.sid());
            j.name("threads").beginArray();
            p.threads().forEach(t -> j.value(t));
            j.endArray();
            j.name("command").value(p.command().orElse(null));
            j.endObject();
        }
        j.endArray();

        j.name("gpu").beginArray();
        for (GpuImages.Group g : c.gpu()) {
            j.beginObject();
            j.name("plugin").value(g.plugin());
            j.name("listed").value(g.listed());
            j.name("total_bytes").value(g.totalBytes());
            j.name("files").beginArray();
            for (GpuImages.File f : g.files()) {
                j.beginObject().name("name").value(f.name()).name("bytes").value(f.bytes()).endObject();
            }
            j.endArray();
            j.endObject();
        }
        j.endArray();
        return j.endObject().toString();
    }
}
