package dev.criugpu.cli.check;

/** One thing that could stop criu dump of the tree; it adds what it finds, each line naming a pid or a file. */
interface Check {
    void run(JobTree tree, Findings out);
}
