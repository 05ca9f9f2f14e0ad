package dev.criugpu.api;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Hook} is the one list of hooks; the shim's build writes its C form ({@link Hook#cHeader}) and asks
 * {@link Hook#main} for each vendor's mask. This test fails when the C form says something other than the enum, or
 * when the shim's sources grow a list, a mask or a table size of their own again.
 */
class ShimHookTableTest {
    private static final Path NATIVE = Path.of(System.getProperty("criugpu.native.dir", "../native"));
    /** {@code X(ID, NAME, (params), (args), KIND)} in SHIM_HOOKS. */
    private static final Pattern ENTRY = Pattern.compile("X\\((\\d+), (\\w+), \\((.*?)\\), \\((.*?)\\), (JAVA|CHILD|SHIM)\\)");

    private static String read(String relative) throws IOException {
        Path p = NATIVE.resolve(relative);
        assertTrue(Files.isRegularFile(p), p.toAbsolutePath() + " does not exist");
        return Files.readString(p);
    }

    @Test
    void theCFormHasEveryHookWithItsIdParametersArgumentsAndKind() {
        Map<String, String[]> entries = new LinkedHashMap<>();
        for (Matcher m = ENTRY.matcher(Hook.cHeader()); m.find(); ) {
            assertNull(entries.put(m.group(2), new String[] {m.group(1), m.group(3), m.group(4), m.group(5)}), m.group(2));
        }
        assertEquals(Arrays.stream(Hook.values()).map(Hook::name).toList(), entries.keySet().stream().toList());
        for (Hook h : Hook.values()) {
            String[] e = entries.get(h.name());
            assertEquals(Integer.toString(h.id), e[0]);
            assertEquals(h.cParameters.isBlank() ? "void" : h.cParameters, e[1]);
            assertEquals(String.join(", ", h.parameters().stream().map(p -> p[1]).toList()), e[2]);
            assertEquals(switch (h.context) { case MAIN -> "JAVA"; case CHILD -> "CHILD"; case SHIM -> "SHIM"; }, e[3]);
        }
        String[] vma = entries.get("UPDATE_VMA_MAP");
        assertEquals("const char *path, uint64_t addr, uint64_t old_pgoff, uint64_t *new_pgoff, int *plugin_fd", vma[1]);
        assertEquals("path, addr, old_pgoff, new_pgoff, plugin_fd", vma[2]);
        assertEquals("X(12, POST_FORKING, (void), (), SHIM)", ENTRY.matcher(Hook.cHeader()).results()
                .map(r -> r.group()).filter(s -> s.contains("POST_FORKING")).findFirst().orElseThrow());
    }

    @Test
    void theShimHasNoListOrMaskOfItsOwn() throws IOException {
        String shim = read("src/shim.h");
        assertTrue(shim.contains("#include \"shim_hooks.h\""), "shim.h includes the list the build writes");
        assertFalse(shim.contains("#define SHIM_HOOKS(X)"), "shim.h defines SHIM_HOOKS itself again");
        String makefile = read("Makefile");
        assertFalse(Pattern.compile("(?m)^\\w+_MASK\\s*=\\s*0x").matcher(makefile).find(), "a mask written into the Makefile");
        assertTrue(makefile.contains("dev.criugpu.api.HookTable"), "the Makefile asks HookTable for the list and the masks");
    }

    @Test
    void theJavaTableHasTheShimsSizeAndExitSlot() throws IOException {
        // the sizes follow from the list too: a hook with a higher id than any before is still one edit there
        Matcher slots = Pattern.compile("#define\\s+SHIM_HOOK_SLOTS\\s+(\\d+)").matcher(Hook.cHeader());
        assertTrue(slots.find(), "Hook.cHeader() defines no SHIM_HOOK_SLOTS");
        assertEquals(Hook.EXIT_SLOT, Integer.parseInt(slots.group(1)));
        assertEquals(Hook.EXIT_SLOT + 1, Hook.TABLE_SLOTS);
        String shim = read("src/shim.h");
        assertTrue(Pattern.compile("\\bMAX_HOOKS\\s*=\\s*SHIM_HOOK_SLOTS\\b").matcher(shim).find(), "shim.h's MAX_HOOKS");
        assertTrue(Pattern.compile("#define\\s+CRIU_GPU_TABLE_SLOTS\\s+\\(SHIM_HOOK_SLOTS \\+ 1\\)").matcher(shim).find(),
                "shim.h's CRIU_GPU_TABLE_SLOTS");
        assertTrue(Pattern.compile("#define\\s+CRIU_GPU_EXIT_SLOT\\s+SHIM_HOOK_SLOTS\\b").matcher(shim).find(),
                "shim.h's CRIU_GPU_EXIT_SLOT");
        assertFalse(read("src/criu_gpu_shim.h").contains("TABLE_SLOTS"), "criu_gpu_shim.h sizes the table again");
        for (Hook h : Hook.values()) assertTrue(h.id < Hook.EXIT_SLOT, h + " outside the shim's table");
    }

}
