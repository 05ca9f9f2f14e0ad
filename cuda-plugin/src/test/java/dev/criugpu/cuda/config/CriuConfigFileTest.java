package dev.criugpu.cuda.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A criu config file's lines as the words criu's parse_statement makes of them (criu 4.2, config.c). */
class CriuConfigFileTest {
    private static Optional<List<String>> words(Path dir, String text) throws Exception {
        return CriuConfigFile.words(Files.writeString(dir.resolve("c.conf"), text));
    }

    @Test
    void eachLineIsAnOptionAndItsValue(@TempDir Path dir) throws Exception {
        assertEquals(Optional.of(List.of("--leave-running", "--timeout", "30", "--tree", "7", "--log-file", "a.log",
                        "--lsm-profile", "x\"y", "--tcp-established")),
                words(dir, "  leave-running\n# a comment\n\ntimeout 30 # seconds\ntree\t7\nlog-file \"a.log\"\n"
                        + "lsm-profile \"x\\\"y\"\ntcp-established # on\n"));
    }

    @Test
    void whatCriuMakesOfOddLines(@TempDir Path dir) throws Exception {
        assertEquals(Optional.of(List.of("--tree", "")), words(dir, "tree \n"), "a blank after the name: an empty value");
        assertEquals(Optional.of(List.of("--leave-running\r")), words(dir, "leave-running\r\n"), "no option criu knows");
        assertEquals(Optional.of(List.of("--manage-cgroups", "-R")), words(dir, "manage-cgroups -R\n"));
        assertEquals(Optional.of(List.of("--timeout", "5")), words(dir, "timeout 5#x\n"));
    }

    @Test
    void linesCriuRefusesOrReadsByChanceAreNotGuessed(@TempDir Path dir) throws Exception {
        assertEquals(Optional.empty(), words(dir, "tree 1 2\n"), "two values");
        assertEquals(Optional.empty(), words(dir, "log-file \"open\n"), "no closing quote");
        assertEquals(Optional.empty(), words(dir, "log-file \"a b\"\n"), "criu checks a quoted space from the line's offset");
        assertEquals(Optional.of(List.of()), CriuConfigFile.words(dir.resolve("absent.conf")), "criu skips it");
        assertEquals(Optional.empty(), CriuConfigFile.words(dir), "a directory");
    }
}
