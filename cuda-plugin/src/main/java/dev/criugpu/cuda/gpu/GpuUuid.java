package dev.criugpu.cuda.gpu;

import java.util.HexFormat;
import java.util.regex.Pattern;

/** A GPU UUID as NVIDIA prints it ({@code GPU-eea0d83f-ebcd-ac27-6b3e-bec2a19724e6}) and as CUuuid's 16 bytes. */
public record GpuUuid(String text) {
    private static final Pattern FORM =
            Pattern.compile("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

    public GpuUuid {
        text = text.trim().toLowerCase(java.util.Locale.ROOT).replaceFirst("^gpu-", "GPU-");
        if (!FORM.matcher(text).matches()) {
            throw new IllegalArgumentException("'" + text + "' is not a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
        }
    }

    public static GpuUuid parse(String text) {
        return new GpuUuid(text);
    }

    public static GpuUuid ofBytes(byte[] bytes) {
        if (bytes.length != 16) throw new IllegalArgumentException("a GPU UUID has 16 bytes, not " + bytes.length);
        String h = HexFormat.of().formatHex(bytes);
        return new GpuUuid("GPU-" + h.substring(0, 8) + "-" + h.substring(8, 12) + "-" + h.substring(12, 16) + "-"
                + h.substring(16, 20) + "-" + h.substring(20));
    }

    /** The 16 bytes of CUuuid. */
    public byte[] bytes() {
        return HexFormat.of().parseHex(text.substring(4).replace("-", ""));
    }

    @Override
    public String toString() {
        return text;
    }
}
