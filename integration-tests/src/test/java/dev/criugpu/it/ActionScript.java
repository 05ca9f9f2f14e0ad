package dev.criugpu.it;

import java.util.List;

/**
 * A criu {@code --action-script} that appends each action criu runs it for ({@code $CRTOOLS_SCRIPT_ACTION}) to a
 * file. criu waits for the script through SIGCHLD, so a complete list shows its child handling still works.
 */
public final class ActionScript {
    private final CriuContainer container;
    public final String script;
    private final String record;

    public ActionScript(CriuContainer container, String script, String record) {
        this.container = container;
        this.script = script;
        this.record = record;
        container.writeFile(script, "#!/bin/sh\necho \"$CRTOOLS_SCRIPT_ACTION\" >> " + record + "\n", 0755);
    }

    public List<String> actions() {
        return container.readFileIfExists(record).lines().toList();
    }
}
