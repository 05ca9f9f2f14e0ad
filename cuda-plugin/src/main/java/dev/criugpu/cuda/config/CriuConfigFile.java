package dev.criugpu.cuda.config;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * One criu config file as the words criu gives getopt_long for it (criu 4.2, config.c: parse_config, parse_statement):
 * each line {@code name [value]} becomes {@code --name} and, where the line has one, its value; leading blanks are
 * skipped; a line or value starting with {@code #} is a comment, and a value ends at a {@code #}; a value may be
 * {@code "quoted"}, with {@code \"} for a quote. criu splits a line at its first space, or else its first tab.
 */
final class CriuConfigFile {
    /** Larger than any config file in use, and far less than the plugin's heap. */
    static final int LIMIT = 1 << 20;

    private CriuConfigFile() {
    }

    /**
     * The words of {@code file}: none when it does not exist (criu skips it); empty where what criu read cannot be
     * known here: a file that is not a regular one, larger than {@link #LIMIT}, unreadable, or a line criu's parser
     * refuses or reads in ways that depend on where a space falls (then criu would have stopped, or the file changed
     * since criu read it).
     */
    static Optional<List<String>> words(Path file) {
        byte[] bytes;
        try {
            BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
            if (!a.isRegularFile()) return Optional.empty();
            try (InputStream in = Files.newInputStream(file)) {
                bytes = in.readNBytes(LIMIT + 1);
            }
        } catch (NoSuchFileException e) {
            return Optional.of(List.of());
        } catch (IOException | SecurityException e) {
            return Optional.empty();
        }
        if (bytes.length > LIMIT) return Optional.empty();
        List<String> words = new ArrayList<>();
        for (String line : new String(bytes, StandardCharsets.UTF_8).split("\n", -1)) {
            if (!statement(line, words)) return Optional.empty();
        }
        return Optional.of(List.copyOf(words));
    }

    /** Adds the words of one line (without its newline); false where criu's reading of it is not known here. */
    private static boolean statement(String line, List<String> out) {
        int start = 0;
        while (start < line.length() && Character.isWhitespace(line.charAt(start))) start++;
        String input = line.substring(start);
        if (input.isEmpty() || input.startsWith("#")) return true;
        int sep = input.indexOf(' ');
        if (sep < 0) sep = input.indexOf('\t');
        if (sep < 0) {
            out.add("--" + input); // as it is: a trailing \r makes an option criu does not know
            return true;
        }
        out.add("--" + input.substring(0, sep));
        String rest = input.substring(sep + 1).stripLeading();
        if (rest.startsWith("#")) return true;
        String value;
        if (rest.startsWith("\"")) {
            int end = 1;
            while ((end = rest.indexOf('"', end)) > 0 && rest.charAt(end - 1) == '\\') end++;
            if (end < 0) return false; // criu: "Unsupported configuration file format"
            value = rest.substring(1, end);
            // criu checks a quoted value's spaces from an offset into the line, not the value: which pass is a guess
            if (value.indexOf(' ') >= 0) return false;
            if (!rest.substring(end + 1).isBlank() && !rest.substring(end + 1).strip().startsWith("#")) return false;
        } else {
            value = rest;
        }
        value = value.replace("\\\"", "\"");
        int hash = value.indexOf('#');
        if (hash >= 0) value = value.substring(0, hash);
        int space = value.indexOf(' ');
        if (space >= 0) {
            if (!value.substring(space).isBlank()) return false; // two values: criu refuses the line
            value = value.substring(0, space);
        }
        out.add(value);
        return true;
    }
}
