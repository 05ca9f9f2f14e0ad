package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Kind;
import dev.criugpu.cli.check.ProcFs.Task;
import dev.criugpu.cuda.job.CudaIpcImports;

import java.nio.file.Path;
import java.util.List;

/** NVIDIA holders that opened another process's CUDA IPC events: the dump refuses them ({@link CudaIpcImports}). */
final class CudaIpcCheck implements Check {
    @Override
    public void run(JobTree tree, Findings out) {
        List<Integer> holders = tree.nvidiaHolders().stream().map(Task::pid).toList();
        if (holders.isEmpty()) return;
        Path proc = tree.proc.root();
        for (String line : CudaIpcImports.blockers(CudaIpcImports.of(proc, holders), CudaIpcImports.inTree(proc, holders))) {
            out.add(Kind.PROBLEM, "nvidia", line + "; the dump refuses it, every task running");
        }
    }
}
