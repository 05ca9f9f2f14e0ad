package dev.criugpu.cli.check;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.HexFormat;
import java.util.Optional;

/**
 * One line of /proc/PID/net/tcp or tcp6: {@code 0: 0100007F:A1B2 0100007F:0050 01 00000000:00000000 ... 0 0 12345 ...}.
 * Addresses are 32-bit words in host byte order (little-endian here), ports plain hex.
 */
public record TcpSocket(String local, String remote, int state, long rxQueue, long inode) {
    static final int ESTABLISHED = 0x01;
    static final int LISTEN = 0x0A;

    public static Optional<TcpSocket> parse(String line) {
        String[] f = line.trim().split("\\s+");
        if (f.length < 10 || !f[0].endsWith(":")) return Optional.empty();
        try {
            String[] queues = f[4].split(":");
            return Optional.of(new TcpSocket(endpoint(f[1]), endpoint(f[2]), Integer.parseInt(f[3], 16),
                    Long.parseLong(queues[1], 16), Long.parseLong(f[9])));
        } catch (RuntimeException | UnknownHostException e) {
            return Optional.empty();
        }
    }

    private static String endpoint(String hex) throws UnknownHostException {
        int colon = hex.indexOf(':');
        byte[] words = HexFormat.of().parseHex(hex.substring(0, colon));
        byte[] addr = new byte[words.length];
        for (int w = 0; w < words.length; w += 4) {
            for (int i = 0; i < 4; i++) addr[w + i] = words[w + 3 - i];
        }
        InetAddress a = InetAddress.getByAddress(addr);
        int port = Integer.parseInt(hex.substring(colon + 1), 16);
        String host = a.getHostAddress();
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }

    /**
     * States criu 4.2 dumps only with --tcp-established (or --tcp-close): ESTABLISHED, SYN_SENT, FIN_WAIT1,
     * FIN_WAIT2, CLOSE_WAIT, LAST_ACK, CLOSING (criu/sk-inet.c, can_dump_inet_sk).
     */
    boolean connected() {
        return switch (state) {
            case 0x01, 0x02, 0x04, 0x05, 0x08, 0x09, 0x0B -> true;
            default -> false;
        };
    }

    /** A listening socket with connections waiting in its accept queue: criu needs --skip-in-flight (drops them). */
    boolean inFlight() {
        return state == LISTEN && rxQueue > 0;
    }

    String stateName() {
        return stateName(state);
    }

    static String stateName(int state) {
        return switch (state) {
            case 0x01 -> "established";
            case 0x02 -> "SYN_SENT";
            case 0x03 -> "SYN_RECV";
            case 0x04 -> "FIN_WAIT1";
            case 0x05 -> "FIN_WAIT2";
            case 0x06 -> "TIME_WAIT";
            case 0x07 -> "CLOSE";
            case 0x08 -> "CLOSE_WAIT";
            case 0x09 -> "LAST_ACK";
            case 0x0A -> "LISTEN";
            case 0x0B -> "CLOSING";
            default -> "state " + state;
        };
    }

    /** The port of the local end. */
    int localPort() {
        return Integer.parseInt(local.substring(local.lastIndexOf(':') + 1));
    }

    /** Whether both ends are loopback addresses. */
    boolean loopback() {
        return isLoopback(local) && isLoopback(remote);
    }

    private static boolean isLoopback(String endpoint) {
        return endpoint.startsWith("127.") || endpoint.startsWith("[0:0:0:0:0:0:0:1]");
    }
}
