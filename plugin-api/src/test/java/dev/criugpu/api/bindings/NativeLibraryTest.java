package dev.criugpu.api.bindings;

import org.junit.jupiter.api.Test;

import java.lang.foreign.FunctionDescriptor;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** An absent library or symbol is an answer, and a downcall to either says which. */
class NativeLibraryTest {
    static final FunctionDescriptor INT = FunctionDescriptor.of(JAVA_INT);

    @Test
    void aLibraryThatLoadsAnswersForItsSymbols() throws Throwable {
        NativeLibrary libc = NativeLibrary.open("libc.so.6", "no libc", "libc too old");
        assertEquals(Optional.empty(), libc.loadError());
        assertTrue(libc.available());
        assertEquals(Optional.empty(), libc.missing("getpid", "getppid"));
        assertEquals(Optional.of("criugpu_no_such_function"), libc.missing("getpid", "criugpu_no_such_function"));
        assertEquals((int) ProcessHandle.current().pid(), (int) libc.downcall("getpid", INT).invokeExact());
        UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> libc.downcall("criugpu_no_such_function", INT));
        assertEquals("libc.so.6 has no criugpu_no_such_function (libc too old)", e.getMessage());
    }

    @Test
    void aPrefixGoesBeforeEverySymbol() {
        NativeLibrary libc = NativeLibrary.open("libc.so.6", "get", null, null);
        assertTrue(libc.has("pid"));
        assertFalse(libc.has("getpid"));
    }

    @Test
    void anAbsentLibraryIsAnAnswer() {
        NativeLibrary none = NativeLibrary.open("libcriugpu-absent.so.9", "not installed", null);
        assertFalse(none.available());
        assertEquals(Optional.of("cannot load libcriugpu-absent.so.9 (not installed)"), none.loadError());
        assertEquals(Optional.of("f"), none.missing("f"));
        UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> none.downcall("f", INT));
        assertEquals("cannot load libcriugpu-absent.so.9 (not installed), needed for f", e.getMessage());
        assertFalse(NativeLibrary.open("/nonexistent/libx.so", null, null).available());
    }
}
