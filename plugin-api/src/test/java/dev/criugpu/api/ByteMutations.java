package dev.criugpu.api;

import java.util.Arrays;
import java.util.Random;

/**
 * The byte-level mutations every image reader's fuzz test applies (inventory, CUDA records, AMD images); each test
 * adds those that know its format (a length field, a varint) after these.
 */
public final class ByteMutations {
    /** How many mutations {@link #generic} knows: a test draws {@code r.nextInt(GENERIC + its own)}. */
    public static final int GENERIC = 4;

    private ByteMutations() {
    }

    /** Mutation {@code which} (0..GENERIC-1) of a non-empty {@code in}: flip bits, overwrite a byte, cut the tail, insert bytes. */
    public static byte[] generic(int which, byte[] in, Random r) {
        byte[] b = in.clone();
        switch (which) {
            case 0 -> {
                for (int k = 1 + r.nextInt(3); k > 0; k--) b[r.nextInt(b.length)] ^= (byte) (1 << r.nextInt(8));
            }
            case 1 -> b[r.nextInt(b.length)] = (byte) r.nextInt(256);
            case 2 -> b = Arrays.copyOf(b, r.nextInt(b.length));
            case 3 -> {
                int at = r.nextInt(b.length + 1);
                byte[] ins = new byte[1 + r.nextInt(8)];
                r.nextBytes(ins);
                byte[] out = new byte[b.length + ins.length];
                System.arraycopy(b, 0, out, 0, at);
                System.arraycopy(ins, 0, out, at, ins.length);
                System.arraycopy(b, at, out, at + ins.length, b.length - at);
                b = out;
            }
            default -> throw new IllegalArgumentException("no generic mutation " + which);
        }
        return b;
    }
}
