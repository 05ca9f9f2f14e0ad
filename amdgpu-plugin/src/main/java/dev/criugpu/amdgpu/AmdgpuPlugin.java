package dev.criugpu.amdgpu;

import dev.criugpu.api.CriuPlugin;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Diagnosis;
import dev.criugpu.api.Hook;
import dev.criugpu.api.Stage;
import dev.criugpu.inventory.RestoreIds;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * AMD KFD plugin. Its hooks still answer NOT_SUPPORTED (the plugin is self-disabled): the building blocks exist
 * (bindings, topology and GPU map, images, KFD dump path, restore plan and C executor) but VRAM/GTT contents are
 * not copied yet, so no dump would be complete.
 */
public final class AmdgpuPlugin implements CriuPlugin {
    public static final String NAME = "amdgpu_plugin";
    private static final Logger log = LoggerFactory.getLogger(AmdgpuPlugin.class);

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<Hook> hooks() {
        return EnumSet.of(Hook.DUMP_EXT_FILE, Hook.RESTORE_EXT_FILE, Hook.HANDLE_DEVICE_VMA, Hook.UPDATE_VMA_MAP,
                Hook.RESUME_DEVICES_LATE, Hook.POST_FORKING);
    }

    @Override
    public int init(Stage stage, CriuServices services) {
        if (stage == Stage.RESTORE) RestoreIds.requireNoJvmCollision(services);
        log.info("Java side ready for {}", stage);
        return 0;
    }

    @Override
    public Diagnosis diagnose() {
        Path kfd = Path.of("/dev/kfd");
        return Files.exists(kfd)
                ? Diagnosis.enabled(NAME, "AMD KFD present (" + kfd + ")", List.of())
                : Diagnosis.disabled(NAME, "no AMD GPU: " + kfd + " is absent", List.of());
    }
}
