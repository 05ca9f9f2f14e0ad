package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Kind;
import dev.criugpu.cli.check.ProcFs.Task;

import java.util.List;
import java.util.Set;

import static dev.criugpu.cli.check.ProcPaths.nvidiaDevice;
import static dev.criugpu.cli.check.Words.who;

/** The tasks that hold NVIDIA device files, and what /proc cannot tell about them. */
final class NvidiaHolderCheck implements Check {
    @Override
    public void run(JobTree tree, Findings out) {
        List<Task> holders = tree.nvidiaHolders();
        if (holders.isEmpty()) return;
        for (Task t : holders) {
            Set<String> files = ProcPaths.nvidiaFiles(t);
            long fds = t.fds().values().stream().filter(ProcPaths::nvidiaDevice).count();
            long maps = t.maps().stream().filter(m -> nvidiaDevice(m.path())).count();
            long gpus = files.stream().filter(f -> f.matches("nvidia\\d+")).count();
            String visible = t.env().get("CUDA_VISIBLE_DEVICES");
            out.add(Kind.NOTE, "nvidia", who(t) + " holds NVIDIA device files: " + String.join(" ", files) + " (" + fds
                    + " fds, " + maps + " mappings" + (visible == null ? "" : "; CUDA_VISIBLE_DEVICES=" + visible) + ")"
                    + (gpus > 1 ? "; files of " + gpus + " GPUs: CUDA opens the file of every GPU it may use, so this "
                    + "alone does not say it uses them all; a process that maps 2 GPUs and holds more than 966 MiB on one is "
                    + "refused by the dump (with peer access between its GPUs, which /proc cannot show, driver 580 cannot "
                    + "restore it above about 1 GiB per GPU; CRIU_CUDA_MULTI_GPU_CHECK=0 where it never enables peer access)" : ""));
        }
        out.add(Kind.NOTE, "nvidia", "/proc cannot tell which of these tasks have CUDA state and which only inherited "
                + "the files through fork() (the plugin handles both); criu-gpu cuda --get-state --pid PID asks the "
                + "driver");
        if (holders.size() > 1) {
            out.add(Kind.NOTE, "nvidia", "/proc cannot show peer access or raw CUDA IPC between these tasks: the driver "
                    + "maps every /dev/nvidiactl and /dev/nvidiaN file at offset 0 (it binds each mapping through an "
                    + "ioctl first) and /dev/nvidia-uvm at offset = address, so equal offsets in two tasks mean "
                    + "nothing; the hints are host memory shared between them and NCCL's settings");
            String driver = tree.proc.nvidiaDriverVersion().map(v -> " (this host: " + v + ")").orElse("");
            out.add(Kind.NOTE, "nvidia", "if one of these tasks maps another's GPU memory, a dump cannot return it on "
                    + "driver 580: the importing task stays checkpointed and the job stuck (measured). CUDA IPC with "
                    + "events (torch.multiprocessing's CUDA tensors) shows as another pid's /dev/shm/cuda.shm file and is "
                    + "refused (a problem above when present); raw cuIpcOpenMemHandle without events and cuMem "
                    + "allocations shared by fd (NCCL's cuMem buffers between ranks) show nothing in /proc and are "
                    + "not seen beforehand; NVIDIA gives CUDA IPC support from driver 610" + driver);
        }
    }
}
