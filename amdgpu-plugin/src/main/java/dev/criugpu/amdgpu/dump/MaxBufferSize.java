package dev.criugpu.amdgpu.dump;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.util.Map;

/**
 * {@code KFD_MAX_BUFFER_SIZE}: caps the host bounce buffer of each GPU copy thread. 0 or unset means no cap (the
 * buffer is as large as the largest BO). Parsed like {@code strtoul(s, 0)} (decimal, 0x hex, leading-0 octal)
 * with an optional suffix {@code k}/{@code K} (KiB), {@code M} (MiB) or {@code G} (GiB); lowercase m and g are
 * rejected, as upstream does.
 */
public final class MaxBufferSize {
    public static final String ENV = "KFD_MAX_BUFFER_SIZE";

    private MaxBufferSize() {
    }

    public static long fromEnvironment(Map<String, String> env) {
        String v = env.get(ENV);
        return v == null ? 0 : parse(v);
    }

    public static long parse(String text) {
        String s = text.trim();
        int shift = 0;
        if (!s.isEmpty()) {
            char last = s.charAt(s.length() - 1);
            switch (last) {
                case 'k', 'K' -> shift = 10;
                case 'M' -> shift = 20;
                case 'G' -> shift = 30;
                default -> shift = -1;
            }
            if (shift >= 0) s = s.substring(0, s.length() - 1);
            else shift = 0;
        }
        long n;
        try {
            if (s.startsWith("0x") || s.startsWith("0X")) n = Long.parseUnsignedLong(s.substring(2), 16);
            else if (s.length() > 1 && s.startsWith("0")) n = Long.parseUnsignedLong(s.substring(1), 8);
            else n = Long.parseUnsignedLong(s);
        } catch (NumberFormatException e) {
            throw new CriuException(Errno.EINVAL, ENV + "=" + text + " is not a size (number with optional k, K, M or G)");
        }
        if (n < 0 || (shift > 0 && n > (Long.MAX_VALUE >>> shift))) {
            throw new CriuException(Errno.EINVAL, ENV + "=" + text + " is too large");
        }
        return n << shift;
    }

    /** The bounce buffer for a GPU whose largest BO is {@code largestBo}. */
    public static long bufferFor(long cap, long largestBo) {
        return cap == 0 ? largestBo : Math.min(cap, largestBo);
    }
}
