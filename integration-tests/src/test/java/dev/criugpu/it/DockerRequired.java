package dev.criugpu.it;

import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.testcontainers.DockerClientFactory;

/**
 * Runs container tests only where a Docker daemon answers. Outside CI, no daemon means the tests are skipped with
 * a message saying so; with the environment variable CI set they must run, so no daemon is a failure.
 */
public final class DockerRequired implements ExecutionCondition {
    private static volatile Boolean available;

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        if (dockerAvailable()) return ConditionEvaluationResult.enabled("docker is reachable");
        if (System.getenv("CI") != null) {
            throw new IllegalStateException("CI is set but no Docker daemon is reachable: the criu integration tests "
                    + "must run in CI (.ci/run starts dockerd and builds the criu images)");
        }
        String msg = "SKIPPED: no Docker daemon reachable, so the criu container tests do not run "
                + "(start dockerd and run integration-tests/criu-image/build.sh; set CI=1 to make this an error)";
        System.err.println(msg);
        return ConditionEvaluationResult.disabled(msg);
    }

    private static boolean dockerAvailable() {
        Boolean a = available;
        if (a == null) {
            available = a = DockerClientFactory.instance().isDockerAvailable();
        }
        return a;
    }
}
