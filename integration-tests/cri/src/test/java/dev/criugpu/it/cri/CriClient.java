package dev.criugpu.it.cri;

import dev.criugpu.it.cri.api.Cri;
import dev.criugpu.it.cri.api.ImageServiceGrpc;
import dev.criugpu.it.cri.api.RuntimeServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The kubelet's side of the CRI, as far as running, checkpointing and restoring one container goes: gRPC calls on
 * the runtime's unix socket, each with a deadline. A call the runtime refuses fails the test with one line naming
 * the call and the runtime's own message (then the runtime's log, from {@code diagnostics}).
 */
final class CriClient implements AutoCloseable {
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(120);

    private final EventLoopGroup loop;
    private final ManagedChannel channel;
    private final Supplier<String> diagnostics;

    CriClient(Path socket, Supplier<String> diagnostics) {
        this.diagnostics = diagnostics;
        this.loop = new EpollEventLoopGroup(1);
        this.channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .eventLoopGroup(loop)
                .channelType(EpollDomainSocketChannel.class)
                .overrideAuthority("localhost")
                .usePlaintext()
                .maxInboundMessageSize(16 << 20)
                .build();
    }

    private RuntimeServiceGrpc.RuntimeServiceBlockingStub runtime() {
        return RuntimeServiceGrpc.newBlockingStub(channel).withDeadlineAfter(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }

    private ImageServiceGrpc.ImageServiceBlockingStub images() {
        return ImageServiceGrpc.newBlockingStub(channel).withDeadlineAfter(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }

    private <T> T call(String name, Supplier<T> rpc) {
        try {
            return rpc.get();
        } catch (StatusRuntimeException e) {
            throw new AssertionError("CRI " + name + " failed: " + e.getStatus().getCode() + ": "
                    + e.getStatus().getDescription() + "\n--- the runtime's log\n" + diagnostics.get(), e);
        }
    }

    Cri.VersionResponse version() {
        return call("Version", () -> runtime().version(Cri.VersionRequest.newBuilder().setVersion("v1").build()));
    }

    /** Pulls an image as the kubelet does before it creates a container; returns the image's reference. */
    String pullImage(String image) {
        return call("PullImage", () -> images().pullImage(Cri.PullImageRequest.newBuilder()
                .setImage(Cri.ImageSpec.newBuilder().setImage(image)).build())).getImageRef();
    }

    String runPodSandbox(Cri.PodSandboxConfig config) {
        return call("RunPodSandbox", () -> runtime().runPodSandbox(Cri.RunPodSandboxRequest.newBuilder()
                .setConfig(config).build())).getPodSandboxId();
    }

    void stopPodSandbox(String id) {
        call("StopPodSandbox", () -> runtime().stopPodSandbox(Cri.StopPodSandboxRequest.newBuilder()
                .setPodSandboxId(id).build()));
    }

    void removePodSandbox(String id) {
        call("RemovePodSandbox", () -> runtime().removePodSandbox(Cri.RemovePodSandboxRequest.newBuilder()
                .setPodSandboxId(id).build()));
    }

    String createContainer(String sandboxId, Cri.ContainerConfig config, Cri.PodSandboxConfig sandbox) {
        return call("CreateContainer", () -> runtime().createContainer(Cri.CreateContainerRequest.newBuilder()
                .setPodSandboxId(sandboxId).setConfig(config).setSandboxConfig(sandbox).build())).getContainerId();
    }

    void startContainer(String id) {
        call("StartContainer", () -> runtime().startContainer(Cri.StartContainerRequest.newBuilder()
                .setContainerId(id).build()));
    }

    void stopContainer(String id, long timeoutSeconds) {
        call("StopContainer", () -> runtime().stopContainer(Cri.StopContainerRequest.newBuilder()
                .setContainerId(id).setTimeout(timeoutSeconds).build()));
    }

    void removeContainer(String id) {
        call("RemoveContainer", () -> runtime().removeContainer(Cri.RemoveContainerRequest.newBuilder()
                .setContainerId(id).build()));
    }

    Cri.ContainerStatus containerStatus(String id) {
        return call("ContainerStatus", () -> runtime().containerStatus(Cri.ContainerStatusRequest.newBuilder()
                .setContainerId(id).build())).getStatus();
    }

    java.util.List<String> containerIds() {
        return call("ListContainers", () -> runtime().listContainers(Cri.ListContainersRequest.getDefaultInstance()))
                .getContainersList().stream().map(Cri.Container::getId).toList();
    }

    java.util.List<String> podSandboxIds() {
        return call("ListPodSandbox", () -> runtime().listPodSandbox(Cri.ListPodSandboxRequest.getDefaultInstance()))
                .getItemsList().stream().map(Cri.PodSandbox::getId).toList();
    }

    /** The status with the runtime's verbose info (containerd's "info" JSON holds the container's host pid). */
    Cri.ContainerStatusResponse containerStatusVerbose(String id) {
        return call("ContainerStatus", () -> runtime().containerStatus(Cri.ContainerStatusRequest.newBuilder()
                .setContainerId(id).setVerbose(true).build()));
    }

    /** The kubelet's checkpoint call (its /checkpoint API): the runtime writes a checkpoint archive to {@code location}. */
    void checkpointContainer(String id, String location, Duration timeout) {
        call("CheckpointContainer", () -> runtime().checkpointContainer(Cri.CheckpointContainerRequest.newBuilder()
                .setContainerId(id).setLocation(location).setTimeout(timeout.toSeconds()).build()));
    }

    @Override
    public void close() {
        channel.shutdownNow();
        try {
            channel.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
}
