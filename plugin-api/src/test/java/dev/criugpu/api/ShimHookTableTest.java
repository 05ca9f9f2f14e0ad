package dev.criugpu.api;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shim lists its hooks once (native/src/shim.h, SHIM_HOOKS: id, name, C parameters, arguments, kind) and its build
 * (native/Makefile) names the vendors' masks; {@link Hook} is the one list on the Java side, and this test fails when
 * the C side says something else: a hook the enum lacks or the other way round, another id, a child hook that enters
 * Java, a table of another size, or a plugin mask with a bit no hook of the enum has.
 */
class ShimHookTableTest {
    private static final Path NATIVE = Path.of(System.getProperty("criugpu.native.dir", "../native"));
    /** {@code X(ID, NAME, (params), (args), KIND)} in SHIM_HOOKS; KIND is the last word before the closing parenthesis. */
    private static final Pattern ENTRY = Pattern.compile("X\\((\\d+),\\s*(\\w+),(.*?),\\s*(JAVA|CHILD|SHIM)\\)", Pattern.DOTALL);
    /** {@code NAME_MASK = 0x...} in the Makefile. */
    private static final Pattern MASK = Pattern.compile("(?m)^(\\w+)_MASK\\s*=\\s*(0x[0-9a-fA-F]+)\\s*$");

    private record Entry(int id, String kind) {
    }

    private static String read(String relative) throws IOException {
        Path p = NATIVE.resolve(relative);
        assertTrue(Files.isRegularFile(p), p.toAbsolutePath() + " does not exist");
        return Files.readString(p);
    }

    /** The entries of shim.h's SHIM_HOOKS, by name. */
    private static Map<String, Entry> shimHooks(String header) {
        Matcher block = Pattern.compile("#define SHIM_HOOKS\\(X\\)(.*?)\\n\\n", Pattern.DOTALL).matcher(header);
        assertTrue(block.find(), "no #define SHIM_HOOKS(X) in shim.h");
        Map<String, Entry> hooks = new LinkedHashMap<>();
        for (Matcher m = ENTRY.matcher(block.group(1)); m.find(); ) {
            assertNull(hooks.put(m.group(2), new Entry(Integer.parseInt(m.group(1)), m.group(4))), m.group(2) + " listed twice");
        }
        return hooks;
    }

    private static int define(String header, String name) {
        Matcher m = Pattern.compile("#define\\s+" + name + "\\s+(\\d+)").matcher(header);
        assertTrue(m.find(), "no #define " + name + " in criu_gpu_shim.h");
        return Integer.parseInt(m.group(1));
    }

    @Test
    void theShimsHooksAreTheEnumsHooksWithTheSameIdsAndContexts() throws IOException {
        Map<String, Entry> hooks = shimHooks(read("src/shim.h"));
        assertEquals(Arrays.stream(Hook.values()).map(Hook::name).sorted().toList(), hooks.entrySet().stream()
                        .filter(e -> !e.getValue().kind().equals("SHIM")).map(Map.Entry::getKey).sorted().toList(),
                "the Java and child hooks of shim.h's SHIM_HOOKS vs dev.criugpu.api.Hook");
        for (Hook h : Hook.values()) {
            Entry e = hooks.get(h.name());
            assertEquals(h.id, e.id(), "criu's id of " + h + " in shim.h");
            assertEquals(h.context == Hook.Context.MAIN ? "JAVA" : "CHILD", e.kind(),
                    h + (h.context == Hook.Context.MAIN ? " must forward to Java" : " runs in a forked child and must not enter Java"));
        }
        assertEquals(new Entry(12, "SHIM"), hooks.get("POST_FORKING"), "the shim's own hook, where a restore's JVM starts");
    }

    @Test
    void theJavaTableHasTheShimsSizeAndExitSlot() throws IOException {
        String header = read("src/criu_gpu_shim.h");
        assertEquals(Hook.TABLE_SLOTS, define(header, "CRIU_GPU_TABLE_SLOTS"));
        assertEquals(Hook.EXIT_SLOT, define(header, "CRIU_GPU_EXIT_SLOT"));
        Matcher max = Pattern.compile("\\bMAX_HOOKS\\s*=\\s*(\\d+)").matcher(read("src/shim.h"));
        assertTrue(max.find(), "no MAX_HOOKS = N in shim.h");
        assertEquals(Hook.EXIT_SLOT, Integer.parseInt(max.group(1)));
    }

    @Test
    void everyBitOfThePluginMasksIsAHookOfTheEnumAndTheCommentSaysWhich() throws IOException {
        String makefile = read("Makefile");
        Map<String, Integer> masks = masks(makefile);
        assertFalse(masks.isEmpty(), "no NAME_MASK = 0x... line in native/Makefile");
        Map<Integer, Hook> byId = Arrays.stream(Hook.values()).collect(Collectors.toMap(h -> h.id, h -> h));
        for (Map.Entry<String, Integer> mask : masks.entrySet()) {
            int bits = mask.getValue();
            for (int id = 0; id < 32; id++) {
                if ((bits & (1 << id)) != 0) {
                    assertNotNull(byId.get(id), mask.getKey() + "_MASK has bit " + id + ", which no Hook has");
                }
            }
            // the comment above the mask lists the hooks by name and id; it must say what the bits say
            Matcher comment = Pattern.compile("(?m)^# " + mask.getKey().charAt(0) + "[^:\\n]*:(.*(?:\\n#\\s+.*)*)\\n"
                    + mask.getKey() + "_MASK").matcher(makefile);
            if (comment.find()) {
                int named = 0;
                for (Matcher m = Pattern.compile("(\\w+)\\((\\d+)\\)").matcher(comment.group(1)); m.find(); ) {
                    Hook h = Hook.valueOf(m.group(1));
                    assertEquals(h.id, Integer.parseInt(m.group(2)), "the Makefile's comment on " + h);
                    named |= 1 << h.id;
                }
                assertEquals(Integer.toHexString(bits), Integer.toHexString(named),
                        "hooks the Makefile's comment names vs " + mask.getKey() + "_MASK");
            }
        }
    }

    /** The Makefile's {@code NAME_MASK = 0x...} lines, by NAME. */
    static Map<String, Integer> masks(String makefile) {
        Map<String, Integer> masks = new TreeMap<>();
        for (Matcher m = MASK.matcher(makefile); m.find(); ) masks.put(m.group(1), Integer.decode(m.group(2)));
        return masks;
    }
}
