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
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shim (native/src/criu_gpu_shim.c, criu_gpu_shim.h) and its build (native/Makefile) list hooks too; {@link Hook}
 * is the one list on the Java side, and this test fails when the C side says something else: a trampoline for a hook
 * the enum lacks or the other way round, another id, a child hook that enters Java, a table of another size, or a
 * plugin mask with a bit no hook of the enum has.
 */
class ShimHookTableTest {
    private static final Path NATIVE = Path.of(System.getProperty("criugpu.native.dir", "../native"));
    /** {@code [NAME] = (void *)t_name,} in the shim's trampoline table. */
    private static final Pattern TABLE_ENTRY = Pattern.compile("\\[(\\w+)]\\s*=\\s*\\(void \\*\\)(\\w+)");
    /** {@code NAME_MASK = 0x...} in the Makefile. */
    private static final Pattern MASK = Pattern.compile("(?m)^(\\w+)_MASK\\s*=\\s*(0x[0-9a-fA-F]+)\\s*$");

    private static String read(String relative) throws IOException {
        Path p = NATIVE.resolve(relative);
        assertTrue(Files.isRegularFile(p), p.toAbsolutePath() + " does not exist");
        return Files.readString(p);
    }

    /** The shim's trampoline table: hook name to the C function that serves it. */
    private static Map<String, String> trampolines(String shim) {
        Matcher block = Pattern.compile("trampolines\\[MAX_HOOKS]\\s*=\\s*\\{(.*?)};", Pattern.DOTALL).matcher(shim);
        assertTrue(block.find(), "no trampolines[MAX_HOOKS] table in criu_gpu_shim.c");
        Map<String, String> table = new LinkedHashMap<>();
        for (Matcher m = TABLE_ENTRY.matcher(block.group(1)); m.find(); ) table.put(m.group(1), m.group(2));
        return table;
    }

    private static int cConstant(String source, String name) {
        Matcher m = Pattern.compile("\\b" + name + "\\s*=\\s*(\\d+)").matcher(source);
        assertTrue(m.find(), "no " + name + " = N in criu_gpu_shim.c");
        int value = Integer.parseInt(m.group(1));
        assertFalse(m.find(), name + " defined twice in criu_gpu_shim.c");
        return value;
    }

    private static int define(String header, String name) {
        Matcher m = Pattern.compile("#define\\s+" + name + "\\s+(\\d+)").matcher(header);
        assertTrue(m.find(), "no #define " + name + " in criu_gpu_shim.h");
        return Integer.parseInt(m.group(1));
    }

    @Test
    void theShimsTrampolinesAreTheEnumsHooksWithTheSameIds() throws IOException {
        String shim = read("src/criu_gpu_shim.c");
        Map<String, String> table = trampolines(shim);
        assertEquals(Arrays.stream(Hook.values()).map(Hook::name).sorted().toList(),
                table.keySet().stream().sorted().toList(), "hooks in the shim's trampoline table vs dev.criugpu.api.Hook");
        for (Hook h : Hook.values()) {
            assertEquals(h.id, cConstant(shim, h.name()), "criu's id of " + h + " in criu_gpu_shim.c");
            String fn = table.get(h.name());
            Matcher body = Pattern.compile("\\b" + fn + "\\s*\\([^)]*\\)\\s*(FORWARD\\((\\w+),)?").matcher(shim);
            assertTrue(body.find(), "no definition of " + fn + " in criu_gpu_shim.c");
            if (h.context == Hook.Context.MAIN) {
                assertEquals(h.name(), body.group(2), fn + " must forward " + h + " to Java");
            } else {
                assertEquals(null, body.group(2), fn + " runs in a forked child and must not enter Java");
            }
        }
    }

    @Test
    void theJavaTableHasTheShimsSizeAndExitSlot() throws IOException {
        String header = read("src/criu_gpu_shim.h");
        assertEquals(Hook.TABLE_SLOTS, define(header, "CRIU_GPU_TABLE_SLOTS"));
        assertEquals(Hook.EXIT_SLOT, define(header, "CRIU_GPU_EXIT_SLOT"));
        assertEquals(Hook.EXIT_SLOT, cConstant(read("src/criu_gpu_shim.c"), "MAX_HOOKS"));
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
