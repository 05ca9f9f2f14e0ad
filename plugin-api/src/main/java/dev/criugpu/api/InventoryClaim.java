package dev.criugpu.api;

/** What a restore's inventory.img says about one plugin (DESIGN rule 7). */
public enum InventoryClaim {
    /** The image predates the inventory plugins field: enable as before. */
    LEGACY,
    /** The image lists this plugin: it holds state only this plugin can restore. */
    LISTED,
    /** The image lists plugins, not this one: nothing to do. */
    NOT_LISTED,
    /** Not a restore. */
    NONE
}
