package dev.criugpu.cuda.cli;

import dev.criugpu.cuda.cli.CudaCheckpointInvocation.Operation;
import dev.criugpu.cuda.cli.CudaCheckpointInvocation.UsageException;
import dev.criugpu.cuda.state.CudaAction;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class CudaCheckpointInvocationTest {
    static CudaCheckpointInvocation p(String... a) {
        return CudaCheckpointInvocation.parse(a);
    }

    static String error(String... a) {
        return assertThrows(UsageException.class, () -> p(a)).getMessage();
    }

    @Test
    void parsesEveryOperation() {
        assertEquals(Operation.GET_STATE, p("--get-state", "--pid", "5").operation());
        assertEquals(5, p("-p", "5", "--get-restore-tid").pid());
        CudaCheckpointInvocation lock = p("--action", "lock", "-p", "5", "-t", "2500");
        assertEquals(CudaAction.LOCK, lock.action());
        assertEquals(2500, lock.timeoutMs());
        assertEquals(1, p("--action", "restore", "--pid", "5", "-d",
                "GPU-eea0d83f-ebcd-ac27-6b3e-bec2a19724e6=GPU-8f4022ba-e0cb-1298-286e-225c953a7feb").deviceMap().size());
        assertEquals(Operation.TOGGLE, p("--toggle", "--pid", "5").operation());
        assertEquals(Operation.HELP, p("-h").operation());
    }

    @Test
    void errorMessages() {
        assertEquals("no operation given (one of --get-state, --get-restore-tid, --action, --toggle)", error("--pid", "5"));
        assertEquals("--pid is required", error("--toggle"));
        assertEquals("--pid 'abc' is not a positive number", error("--toggle", "--pid", "abc"));
        assertEquals("--pid '0' is not a positive number", error("--toggle", "--pid", "0"));
        assertEquals("--action: unknown action 'freeze' (expected lock, checkpoint, restore or unlock)", error("--action", "freeze", "--pid", "5"));
        assertEquals("--timeout applies only to --action lock", error("--action", "unlock", "--pid", "5", "--timeout", "3"));
        assertEquals("--device-map applies only to --action restore", error("--toggle", "--pid", "5", "-d", "x=y"));
        assertEquals("--get-state: only one operation at a time", error("--toggle", "--get-state", "--pid", "5"));
        assertEquals("--pid needs a value", error("--toggle", "--pid"));
        assertEquals("unknown option '--pdi'", error("--toggle", "--pdi", "5"));
        assertEquals("--device-map: 'x' is not of the form oldUuid=newUuid", error("--action", "restore", "--pid", "5", "-d", "x"));
    }
}
