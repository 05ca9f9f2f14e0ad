package dev.criugpu.it.inventory;

import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The {@code criu-gpu inspect --json} schema 1 as docs/criu-gpu-cli.md ("inspect") documents it: every required key is
 * there with its type. A failure names the JSON path.
 */
final class InspectSchema {
    private static final Set<String> INVENTORY_FLAGS = Set.of("fdinfo_per_id", "ns_per_id", "root_cg_set", "lsmtype",
            "dump_uptime", "pre_dump_mode", "tcp_close", "network_lock_method", "allow_uprobes", "compress",
            "compress_block_size");

    private InspectSchema() {
    }

    static void check(Map<String, Object> report) {
        if (!BigInteger.ONE.equals(report.get("schema"))) fail("schema", "is not 1: " + report.get("schema"));
        string(report, "directory", false);

        Map<String, Object> criu = object(report, "criu");
        number(criu, "criu.img_version");
        string(criu, "criu.writer", false);
        string(criu, "criu.run_id", true);
        Map<String, Object> inventory = object(criu, "criu.inventory");
        for (String key : inventory.keySet()) {
            if (!INVENTORY_FLAGS.contains(key)) fail("criu.inventory." + key, "is not a documented inventory field");
        }

        Map<String, Object> plugins = object(report, "plugins");
        bool(plugins, "plugins.recorded");
        for (Object name : array(plugins, "plugins.required")) {
            if (!(name instanceof String)) fail("plugins.required[]", "holds a non-string: " + name);
        }
        Object hostCopy = plugins.get("cuda_host_copy");
        if (!"plugin".equals(hostCopy) && !"criu".equals(hostCopy)) fail("plugins.cuda_host_copy", "is not plugin or criu: " + hostCopy);

        List<?> processes = array(report, "processes");
        if (processes.isEmpty()) fail("processes", "is empty");
        for (Object o : processes) {
            Map<String, Object> p = asObject(o, "processes[]");
            for (String key : List.of("pid", "ppid", "pgid", "sid")) number(p, "processes[]." + key);
            for (Object tid : array(p, "processes[].threads")) {
                if (!(tid instanceof BigInteger)) fail("processes[].threads[]", "holds a non-integer: " + tid);
            }
            string(p, "processes[].command", true);
        }

        for (Object o : array(report, "gpu")) {
            Map<String, Object> g = asObject(o, "gpu[]");
            string(g, "gpu[].plugin", false);
            bool(g, "gpu[].listed");
            number(g, "gpu[].total_bytes");
            for (Object f : array(g, "gpu[].files")) {
                Map<String, Object> file = asObject(f, "gpu[].files[]");
                string(file, "gpu[].files[].name", false);
                number(file, "gpu[].files[].bytes");
            }
        }
    }

    private static Object present(Map<String, Object> parent, String path) {
        String key = path.substring(path.lastIndexOf('.') + 1);
        if (!parent.containsKey(key)) fail(path, "is missing (keys: " + parent.keySet() + ")");
        return parent.get(key);
    }

    private static Map<String, Object> object(Map<String, Object> parent, String path) {
        return asObject(present(parent, path), path);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asObject(Object o, String path) {
        if (!(o instanceof Map<?, ?>)) fail(path, "is not an object: " + o);
        return (Map<String, Object>) o;
    }

    private static List<?> array(Map<String, Object> parent, String path) {
        Object o = present(parent, path);
        if (!(o instanceof List<?> list)) throw fail(path, "is not an array: " + o);
        return list;
    }

    private static void number(Map<String, Object> parent, String path) {
        Object o = present(parent, path);
        if (!(o instanceof BigInteger)) fail(path, "is not an integer: " + o);
    }

    private static void bool(Map<String, Object> parent, String path) {
        Object o = present(parent, path);
        if (!(o instanceof Boolean)) fail(path, "is not a boolean: " + o);
    }

    private static void string(Map<String, Object> parent, String path, boolean nullable) {
        Object o = present(parent, path);
        if (o == null && nullable) return;
        if (!(o instanceof String)) fail(path, "is not a string" + (nullable ? " or null" : "") + ": " + o);
    }

    private static AssertionError fail(String path, String why) {
        throw new AssertionError("inspect --json: " + path + " " + why);
    }
}
