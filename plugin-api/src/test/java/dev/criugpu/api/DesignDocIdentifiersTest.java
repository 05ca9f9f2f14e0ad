package dev.criugpu.api;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.FileVisitResult;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/DESIGN.md names classes, methods, C functions, macros and variables in backticks; each must exist in the tree's
 * sources, so that a rename or a misspelling shows here instead of leaving the design describing code that is gone.
 *
 * <p>The rule, on each inline code span of the document (text between two backticks, outside ``` blocks):
 * <ol>
 * <li>A span {@code NAME(...)} (a call, with or without arguments) stands for NAME. Any other span must be a dotted
 * name, {@code [.]ident(.ident)*}, or it is skipped: spans with spaces, paths, options, values, globs and
 * placeholders ({@code -R}, {@code java/criu-gpu.cfg}, {@code cuda-plugin-<pid>.img}, {@code 0x200}).</li>
 * <li>A dotted name whose last part is a file extension ({@code kfd_chardev.c}, {@code gpu_plan.h}) is skipped.</li>
 * <li>A name that starts with a dot ({@code .start} after {@code RestoreStart.check}) is a member of the type named
 * last before it.</li>
 * <li>The name is checked when one of its parts looks like code: a type (an upper-case letter first and a lower-case
 * one after it: {@code Hook}, {@code HookDispatcher}), lowerCamelCase ({@code checkRestore}), snake_case
 * ({@code print_on_level}, {@code t_POST_FORKING}), an upper-case constant with an underscore
 * ({@code CRIU_CUDA_GUARD}, {@code SHIM_HOOKS}), or anything written as a call ({@code fork()}). Single plain words
 * ({@code prepare}, {@code java.lang.foreign}) are not checked.</li>
 * <li>Every part of a checked name must be a whole identifier in some source file of the tree (*.java, *.c, *.h, *.cu,
 * *.py, *.sh, pom.xml, Makefile; comments count, build output and hidden folders do not). A part after a type part
 * whose own file Type.java exists must be an identifier in that file ({@code RestoreStart.check} needs
 * {@code check} in RestoreStart.java).</li>
 * <li>{@link #EXTERNAL} lists the few names DESIGN cites from criu's or the kernel's sources that ours need not
 * contain.</li>
 * </ol>
 * A name that happens to exist elsewhere in the tree passes: this catches names that exist nowhere.
 */
class DesignDocIdentifiersTest {
    private static final Path ROOT = Path.of(System.getProperty("criugpu.repo.dir", ".."));
    private static final Path DESIGN = ROOT.resolve("docs/DESIGN.md");

    /** criu's ({@code fork_with_pid}, {@code open_vmas}, {@code prepare_fds}) and the kernel's clone names. */
    static final Set<String> EXTERNAL = Set.of("fork_with_pid", "open_vmas", "prepare_fds", "set_tid", "CLONE_VM");

    private static final String ID = "[A-Za-z_][A-Za-z0-9_]*";
    private static final Pattern FENCE = Pattern.compile("(?ms)^```.*?^```[^\\n]*$");
    private static final Pattern SPAN = Pattern.compile("`([^`]+)`");
    private static final Pattern CALL = Pattern.compile("(\\.?" + ID + "(?:\\." + ID + ")*)\\(.*\\)");
    private static final Pattern DOTTED = Pattern.compile("\\.?" + ID + "(?:\\." + ID + ")*");
    private static final Pattern WORD = Pattern.compile(ID);
    private static final Set<String> FILE_EXTENSIONS = Set.of("c", "h", "cu", "java", "py", "sh", "go", "img", "cfg",
            "log", "md", "so", "proto", "toml", "tar", "json", "txt", "xml");

    /** The identifiers of the tree's sources: every one, and those of each Java file by its simple name. */
    record Sources(Set<String> words, Map<String, Set<String>> byType) {
        boolean has(String word) {
            return words.contains(word);
        }
    }

    /** One name of the document that the sources do not have, with the part that is missing. */
    record Missing(String span, String part) {
        @Override
        public String toString() {
            return "`" + span + "` (" + part + ")";
        }
    }

    @Test
    void everyCodeNameInDesignExistsInTheSources() throws IOException {
        assertTrue(Files.isRegularFile(DESIGN), DESIGN.toAbsolutePath() + " does not exist");
        Sources sources = scan(ROOT);
        List<Missing> missing = check(Files.readString(DESIGN), sources);
        assertEquals(List.of(), missing, "docs/DESIGN.md names what no source of the tree has (rename it there, or "
                + "add a name of criu's or the kernel's to EXTERNAL)");
    }

    @Test
    void theRuleCatchesAMisspeltName() {
        Sources sources = sources(Map.of(
                "RestoreStart", "final class RestoreStart { static void check() {} static void start() {} }",
                "HookDispatcher", "final class HookDispatcher { static int guarded() { return 0; } }"),
                "int probe_restore(void); #define PLAN_WAIT_SECONDS 300 /* CRIU_GPU_PROBE_TIMEOUT_S */");
        String good = "`HookDispatcher.guarded`, `RestoreStart.check`, then `.start`; `probe_restore()` waits "
                + "`PLAN_WAIT_SECONDS` or `CRIU_GPU_PROBE_TIMEOUT_S`. Skipped: `prepare`, `-R`, `java/criu-gpu.cfg`, "
                + "`cuda-plugin-<pid>.img`, `kfd_chardev.c`, `criu dump -t PID`.\n```\nNotAName inside a block\n```\n";
        assertEquals(List.of(), check(good, sources));

        String bad = "`HookDispatcher.gaurded`, `RestoreStrat.check`, then `.open`; `probe_restor()`, "
                + "`PLAN_WAIT_SECOND`, `t_post_forking`, `Bootstrap`.";
        assertEquals(List.of(new Missing("HookDispatcher.gaurded", "gaurded"),
                        new Missing("RestoreStrat.check", "RestoreStrat"),
                        new Missing(".open", "open"),
                        new Missing("probe_restor()", "probe_restor"),
                        new Missing("PLAN_WAIT_SECOND", "PLAN_WAIT_SECOND"),
                        new Missing("t_post_forking", "t_post_forking"),
                        new Missing("Bootstrap", "Bootstrap")),
                check(bad, sources));
    }

    /** The names of {@code markdown}'s code spans that {@code sources} do not have, in document order. */
    static List<Missing> check(String markdown, Sources sources) {
        List<Missing> missing = new ArrayList<>();
        String lastType = null;
        Matcher span = SPAN.matcher(FENCE.matcher(markdown).replaceAll(""));
        while (span.find()) {
            String text = span.group(1).strip().replaceAll("\\s+", " ");
            Matcher call = CALL.matcher(text);
            boolean called = call.matches();
            String name = called ? call.group(1) : text;
            if (!called && !DOTTED.matcher(name).matches()) continue;
            List<String> parts = new ArrayList<>(List.of(name.replaceFirst("^\\.", "").split("\\.")));
            if (parts.size() > 1 && FILE_EXTENSIONS.contains(parts.getLast())) continue;
            if (name.startsWith(".") && lastType != null) parts.addFirst(lastType);
            if (!called && parts.stream().noneMatch(DesignDocIdentifiersTest::looksLikeCode)) continue;
            int i = 0;
            for (; i < parts.size(); i++) {
                String part = parts.get(i);
                Set<String> owner = i > 0 ? sources.byType().get(parts.get(i - 1)) : null;
                boolean found = EXTERNAL.contains(part) || (owner != null ? owner.contains(part) : sources.has(part));
                if (!found) {
                    missing.add(new Missing(text, part));
                    break;
                }
            }
            if (i > 0 && isType(parts.getFirst())) lastType = parts.getFirst();
        }
        return missing;
    }

    static boolean looksLikeCode(String part) {
        return isType(part)
                || part.matches("[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*")
                || (part.contains("_") && part.chars().anyMatch(Character::isLowerCase))
                || part.matches("[A-Z][A-Z0-9]*(_[A-Z0-9]+)+");
    }

    private static boolean isType(String part) {
        return Character.isUpperCase(part.charAt(0)) && part.chars().anyMatch(Character::isLowerCase)
                && !part.contains("_");
    }

    /** Sources for the rule's own check: Java files by type name, and other text. */
    private static Sources sources(Map<String, String> javaByType, String other) {
        Set<String> words = new HashSet<>(words(other));
        Map<String, Set<String>> byType = new HashMap<>();
        javaByType.forEach((type, text) -> {
            words.addAll(words(text));
            byType.put(type, words(text));
        });
        return new Sources(words, byType);
    }

    private static Sources scan(Path root) throws IOException {
        Set<String> words = new HashSet<>();
        Map<String, Set<String>> byType = new HashMap<>();
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
                String name = dir.equals(root) ? "" : dir.getFileName().toString();
                return name.equals("target") || name.startsWith(".") ? FileVisitResult.SKIP_SUBTREE
                        : FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path p, BasicFileAttributes attrs) throws IOException {
                String file = p.getFileName().toString();
                if (attrs.isRegularFile() && isSource(file)) {
                    Set<String> w = words(new String(Files.readAllBytes(p), StandardCharsets.ISO_8859_1));
                    words.addAll(w);
                    if (file.endsWith(".java")) {
                        byType.computeIfAbsent(file.substring(0, file.length() - 5), k -> new HashSet<>()).addAll(w);
                    }
                }
                return FileVisitResult.CONTINUE;
            }
        });
        return new Sources(words, byType);
    }

    private static boolean isSource(String file) {
        if (file.equals(DesignDocIdentifiersTest.class.getSimpleName() + ".java")) return false; // its samples
        return file.equals("pom.xml") || file.equals("Makefile") || file.matches(".*\\.(java|c|h|cu|py|sh)");
    }

    private static Set<String> words(String text) {
        Set<String> out = new HashSet<>();
        for (Matcher m = WORD.matcher(text); m.find(); ) out.add(m.group());
        return out;
    }
}
