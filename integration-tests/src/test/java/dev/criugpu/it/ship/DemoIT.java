package dev.criugpu.it.ship;

import dev.criugpu.it.CommandResult;
import dev.criugpu.it.DockerRequired;
import dev.criugpu.it.HostCommand;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 7.4: the README's demo command runs a real dump and restore with our plugins on this (GPU-less, Docker)
 * machine and says what happened: plugins loaded and why they are disabled, timings, the checkpoint as inspect
 * sees it, and the process continuing.
 */
@ExtendWith(DockerRequired.class)
class DemoIT {
    @Test
    void demoNarratesARealDumpAndRestore() {
        Path repo = Path.of("..").toAbsolutePath().normalize();
        CommandResult demo = HostCommand.run(repo, List.of("bash", "integration-tests/demo/demo.sh"));
        String out = demo.stdout();
        assertEquals(0, demo.exitCode(), demo.describe());
        assertTrue(out.contains("cuda_plugin: disabled: no NVIDIA GPU"), out);
        assertTrue(out.contains("amdgpu_plugin: disabled: no AMD GPU"), out);
        assertTrue(out.contains("cuda_plugin: disabled: the image holds no CUDA state"), out);
        assertTrue(Pattern.compile("dump took \\d+ ms").matcher(out).find(), out);
        assertTrue(Pattern.compile("restore took \\d+ ms").matcher(out).find(), out);
        assertTrue(out.contains("restore needs   no plugin"), out);
        Matcher tree = Pattern.compile("Process tree \\((\\d+) process").matcher(out);
        assertTrue(tree.find() && Integer.parseInt(tree.group(1)) >= 1, out);
        Matcher counter = Pattern.compile("counter was (\\d+) at the dump, now (\\d+)").matcher(out);
        assertTrue(counter.find(), out);
        assertTrue(Long.parseLong(counter.group(2)) > Long.parseLong(counter.group(1)), out);
    }
}
