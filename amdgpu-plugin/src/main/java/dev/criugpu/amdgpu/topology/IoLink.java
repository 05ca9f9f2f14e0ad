package dev.criugpu.amdgpu.topology;

import dev.criugpu.amdgpu.bindings.kfd_sysfs_h;

/** A link from a topology node to node {@code nodeTo}; {@code type} is an HSA_IOLINK_TYPE (2 PCIe, 11 XGMI). */
public record IoLink(int type, int nodeTo) {
    public static final int PCIE = kfd_sysfs_h.HSA_IOLINK_TYPE_PCIEXPRESS();
    public static final int XGMI = kfd_sysfs_h.HSA_IOLINK_TYPE_XGMI();

    /** Only PCIe and XGMI links take part in matching; others are dropped while parsing. */
    public static boolean kept(int type) {
        return type == PCIE || type == XGMI;
    }

    public String typeName() {
        return type == XGMI ? "XGMI" : type == PCIE ? "PCIe" : "type " + type;
    }
}
