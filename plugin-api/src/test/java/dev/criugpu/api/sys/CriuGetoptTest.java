package dev.criugpu.api.sys;

import dev.criugpu.api.sys.CriuGetopt.Option;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** criu's words read as glibc's getopt_long reads them with criu 4.2's option table. */
class CriuGetoptTest {
    private static List<Option> options(String... words) {
        return CriuGetopt.read(List.of(words)).options();
    }

    private static Option o(String name, String value) {
        return new Option(name, value);
    }

    @Test
    void eachLetterMeansItsLongOptionAndTakesTheSameKindOfValue() {
        for (var e : CriuGetopt.SHORT_NAMES.entrySet()) {
            int at = CriuGetopt.SHORT_OPTS.indexOf(e.getKey());
            String kind = CriuGetopt.SHORT_OPTS.substring(at + 1).replaceAll("^(:*).*", "$1");
            CriuGetopt.Arg expected = switch (kind) {
                case "" -> CriuGetopt.Arg.NONE;
                case ":" -> CriuGetopt.Arg.REQUIRED;
                default -> CriuGetopt.Arg.OPTIONAL;
            };
            assertEquals(expected, CriuGetopt.LONG_OPTS.get(e.getValue()), "-" + e.getKey() + " --" + e.getValue());
        }
        assertEquals(CriuGetopt.SHORT_OPTS.replace(":", "").length(), CriuGetopt.SHORT_NAMES.size());
        assertEquals(85 + 27, CriuGetopt.LONG_OPTS.size(), "criu 4.2's 85 entries, and no- of its 27 BOOL_OPTs");
    }

    @Test
    void anOptionalValueIsOnlyEverAttached() {
        assertEquals(List.of(o("manage-cgroups", null), o("leave-running", null)), options("--manage-cgroups", "-R"));
        assertEquals(List.of(o("cpu-cap", null), o("leave-running", null)), options("--cpu-cap", "-R"));
        assertEquals(List.of(o("manage-cgroups", "full"), o("leave-running", null)), options("--manage-cgroups=full", "-R"));
        assertEquals(List.of(o("verbosity", "4R")), options("-v4R"));
        assertEquals(List.of(o("leave-running", null), o("verbosity", "4")), options("-Rv4"));
    }

    @Test
    void everyRequiredValueTakesTheNextWordWhateverItLooksLike() {
        for (var e : CriuGetopt.LONG_OPTS.entrySet()) {
            if (e.getValue() != CriuGetopt.Arg.REQUIRED) continue;
            assertEquals(List.of(o(e.getKey(), "-R"), o("leave-stopped", null)), options("--" + e.getKey(), "-R", "-s"),
                    e.getKey());
            assertEquals(List.of(o(e.getKey(), "--leave-running")), options("--" + e.getKey(), "--leave-running"));
        }
        for (char letter : "tDorJWLM".toCharArray()) {
            assertEquals(List.of(o(CriuGetopt.SHORT_NAMES.get(letter), "-R")), options("-" + letter, "-R"));
            assertEquals(List.of(o("leave-running", null), o(CriuGetopt.SHORT_NAMES.get(letter), "R")),
                    options("-R" + letter + "R"));
        }
    }

    @Test
    void aPrefixThatNamesOneOptionIsThatOption() {
        assertEquals(List.of(o("leave-running", null)), options("--leave-r"));
        assertEquals(List.of(o("ghost-limit", "-R")), options("--ghost-l", "-R"));
        assertEquals(Optional.of("--ghost"), CriuGetopt.read(List.of("--ghost")).refused(), "ghost-limit or -fiemap");
        assertEquals(List.of(o("tls", null)), options("--tls"), "a whole name, though others start with it");
        assertEquals(Optional.of("--leave"), CriuGetopt.read(List.of("--leave")).refused(), "leave-stopped or -running");
    }

    @Test
    void whatCriuRefusesIsSaidAndNothingAfterItIsRead() {
        assertEquals(Optional.of("--frobnicate"), CriuGetopt.read(List.of("--frobnicate", "-R")).refused());
        assertEquals(List.of(), options("--frobnicate", "-R"));
        assertEquals(Optional.of("-Z"), CriuGetopt.read(List.of("-Z")).refused());
        assertEquals(Optional.of("--leave-running=yes"), CriuGetopt.read(List.of("--leave-running=yes")).refused());
        assertEquals(Optional.of("--tree"), CriuGetopt.read(List.of("-R", "--tree")).refused(), "its value missing");
        assertEquals(List.of(o("leave-running", null)), options("-R", "--tree"));
    }

    @Test
    void operandsAnywhereAndEverythingAfterTheDoubleDash() {
        CriuGetopt.Reading r = CriuGetopt.read(List.of("dump", "-t", "7", "extra", "--", "-R"));
        assertEquals(List.of(o("tree", "7")), r.options());
        assertEquals(List.of("dump", "extra", "-R"), r.operands());
        assertEquals(List.of("-"), CriuGetopt.read(List.of("-")).operands());
    }
}
