package dev.criugpu.cli.check;

import org.junit.jupiter.api.Test;

import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Lines of /proc/net/tcp and tcp6 as the kernel writes them (little-endian words). */
class TcpSocketTest {
    @Test
    void ipv4Established() {
        TcpSocket s = TcpSocket.parse("   3: 0100007F:A1B2 0100007F:7403 01 00000000:00000000 00:00000000 00000000     0"
                + "        0 123456 1 0000000000000000 20 4 30 10 -1").orElseThrow();
        assertEquals(new TcpSocket("127.0.0.1:41394", "127.0.0.1:29699", 1, 0, 123456), s);
        assertTrue(s.connected());
        assertTrue(s.loopback());
        assertFalse(s.inFlight());
    }

    @Test
    void ipv6ListeningWithConnectionsWaiting() {
        TcpSocket s = TcpSocket.parse("   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000"
                + " 0A 00000000:00000002 00:00000000 00000000     0        0 999 1 0000000000000000 100 0 0 10 0")
                .orElseThrow();
        assertEquals("[0:0:0:0:0:0:0:1]:8080", s.local());
        assertEquals(0x0A, s.state());
        assertFalse(s.connected());
        assertTrue(s.inFlight());
    }

    @Test
    void ipv4MappedIpv6IsPrintedAsIpv4() {
        TcpSocket s = TcpSocket.parse("   1: 0000000000000000FFFF00000100007F:0050 0000000000000000FFFF00000A00000A:C350"
                + " 08 00000000:00000000 00:00000000 00000000     0        0 5 1 0 20 4 30 10 -1").orElseThrow();
        assertEquals("127.0.0.1:80", s.local());
        assertEquals("10.0.0.10:50000", s.remote());
        assertEquals("CLOSE_WAIT", s.stateName());
        assertTrue(s.connected());
    }

    @Test
    void theHeaderIsNoSocket() {
        assertEquals(Optional.empty(), TcpSocket.parse("  sl  local_address rem_address   st tx_queue rx_queue tr "
                + "tm->when retrnsmt   uid  timeout inode"));
    }
}
