package dev.criugpu.api;

/**
 * What the shim's build (native/Makefile) takes from {@link Hook}: {@code header} prints {@link Hook#cHeader()} (it
 * becomes native/target/gen/shim_hooks.h); {@code mask NAME} the hex mask of the hooks the plugin named NAME on the
 * class path registers (its main-process and child hooks; the shim adds its own).
 */
public final class HookTable {
    private HookTable() {
    }

    public static void main(String[] args) {
        if (args.length == 1 && args[0].equals("header")) {
            System.out.print(Hook.cHeader());
        } else if (args.length == 2 && args[0].equals("mask")) {
            CriuPlugin plugin = Plugins.all().stream().filter(p -> p.name().equals(args[1])).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("no plugin named " + args[1] + " on the class path"));
            System.out.println("0x" + Integer.toHexString(Hook.mask(plugin.hooks())));
        } else {
            System.err.println("usage: HookTable header | HookTable mask PLUGIN_NAME");
            System.exit(2);
        }
    }
}
