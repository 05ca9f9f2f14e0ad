package dev.criugpu.cuda.agent;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The warm-up makes a line of every kind the protocol has, each of which reads back as written. */
class AgentWarmUpTest {
    @Test
    void everyKindOfCriusLinesIsWarmed() {
        assertEquals(kinds(AgentProtocol.ToAgent.class), classes(AgentWarmUp.toAgent()));
        for (AgentProtocol.ToAgent m : AgentWarmUp.toAgent()) assertEquals(m, AgentProtocol.toAgent(AgentProtocol.encode(m)));
    }

    @Test
    void everyKindOfTheAgentsLinesIsWarmed() {
        assertEquals(kinds(AgentProtocol.ToCriu.class), classes(AgentWarmUp.toCriu()));
        for (AgentProtocol.ToCriu m : AgentWarmUp.toCriu()) assertEquals(m, AgentProtocol.toCriu(AgentProtocol.encode(m)));
    }

    @Test
    void runsWithoutAnAgentOrADriver() {
        assertDoesNotThrow(AgentWarmUp::run);
    }

    private static Set<String> kinds(Class<?> sealed) {
        return Arrays.stream(sealed.getPermittedSubclasses()).map(Class::getName).collect(Collectors.toSet());
    }

    private static Set<String> classes(List<?> lines) {
        return lines.stream().map(m -> m.getClass().getName()).collect(Collectors.toSet());
    }
}
