package dev.criugpu.it;

/** The local Docker images integration-tests/criu-image/build.sh builds, one per criu version under test. */
public enum CriuImage {
    /** Debian sid: the criu that works on this kernel, 13 plugin hooks. */
    CRIU_4_2_1("criu-java-gpu/criu:4.2.1", "4.2.1"),
    /** Debian trixie: the older plugin ABI (12 hooks); its dumps fail on inet sockets on kernels >= 6.16. */
    CRIU_4_1_1("criu-java-gpu/criu:4.1.1", "4.1.1"),
    /** The sid image plus CRIU's own test suite zdtm, built from Debian's criu 4.2.1 source (ZdtmIT). */
    ZDTM_4_2_1("criu-java-gpu/zdtm:4.2.1", "4.2.1"),
    /** The sid image with criu 4.3 from Debian experimental: 17 plugin hooks (DUMP_DEVICES_LATE, DUMP_FINISH...). */
    CRIU_4_3("criu-java-gpu/criu:4.3", "4.3"),
    /** The zdtm image with criu 4.3 in place of 4.2.1: zdtm 4.2.1's tests against criu 4.3. */
    ZDTM_4_3("criu-java-gpu/zdtm:4.3", "4.3");

    /** The system property that picks the criu the ITs written for 4.2.1 run against: 4.2.1 (default) or 4.3. */
    public static final String UNDER_TEST = "criugpu.criu";

    public final String tag;
    public final String criuVersion;

    CriuImage(String tag, String criuVersion) {
        this.tag = tag;
        this.criuVersion = criuVersion;
    }

    /**
     * The image a container asked for as this one runs on: with -Dcriugpu.criu=4.3 (test-all.sh's second pass) the
     * 4.2.1 images become their 4.3 counterparts; every other image, and every image by default, stays.
     */
    public CriuImage underTest() {
        String v = System.getProperty(UNDER_TEST, "4.2.1");
        return switch (v) {
            case "4.2.1" -> this;
            case "4.3" -> this == CRIU_4_2_1 ? CRIU_4_3 : this == ZDTM_4_2_1 ? ZDTM_4_3 : this;
            default -> throw new IllegalArgumentException("-D" + UNDER_TEST + "=" + v + ": expected 4.2.1 or 4.3");
        };
    }
}
