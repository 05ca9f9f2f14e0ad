package dev.criugpu.it;

/** The local Docker images integration-tests/criu-image/build.sh builds, one per criu version under test. */
public enum CriuImage {
    /** Debian sid: the criu that works on this kernel, 13 plugin hooks. */
    CRIU_4_2_1("criu-java-gpu/criu:4.2.1", "4.2.1"),
    /** Debian trixie: the older plugin ABI (12 hooks); its dumps fail on inet sockets on kernels >= 6.16. */
    CRIU_4_1_1("criu-java-gpu/criu:4.1.1", "4.1.1"),
    /** The sid image plus CRIU's own test suite zdtm, built from Debian's criu 4.2.1 source (ZdtmIT). */
    ZDTM_4_2_1("criu-java-gpu/zdtm:4.2.1", "4.2.1");

    public final String tag;
    public final String criuVersion;

    CriuImage(String tag, String criuVersion) {
        this.tag = tag;
        this.criuVersion = criuVersion;
    }
}
