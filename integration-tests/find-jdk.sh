#!/usr/bin/env bash
# Finds the JDK 22 or newer (FFM is final from 22) that the build and the scripts use, so that no script names one
# vendor's path: JAVA_HOME if it is one, else the JDK of `javac` or `java` on PATH, else the newest under
# /usr/lib/jvm. A JDK here has bin/javac and include/jni.h (the shim is compiled against it).
#   source integration-tests/find-jdk.sh; JAVA_HOME=$(find_jdk) || exit 1
#   JAVA_HOME=$(integration-tests/find-jdk.sh) mvn -B install
# find_jdk prints the JDK's home and returns 0, or says on stderr what it looked at and returns 1.

FIND_JDK_MIN=22

# The major version of the JDK at $1, or nothing (and status 1) when $1 is no JDK.
jdk_major() {
    local home=$1 v=
    [[ -x "$home/bin/javac" && -f "$home/include/jni.h" ]] || return 1
    [[ -f "$home/release" ]] && v=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$home/release")
    [[ -n "$v" ]] || v=$("$home/bin/java" -version 2>&1 | sed -n '1s/.*version "\([0-9]*\).*/\1/p')
    [[ "$v" =~ ^[0-9]+$ ]] || return 1
    echo "$v"
}

# The JDK home of command $1 on PATH (bin/ resolved through links, as Debian's alternatives make them), or nothing.
jdk_home_of() {
    local p
    p=$(command -v "$1" 2>/dev/null) || return 0
    p=$(readlink -f "$p")
    [[ "$p" == */bin/* ]] && echo "${p%/bin/*}"
    return 0
}

find_jdk() {
    local c major best= best_major=0 seen=" "
    if [[ -n "${JAVA_HOME:-}" ]]; then
        if major=$(jdk_major "$JAVA_HOME") && ((major >= FIND_JDK_MIN)); then
            echo "$JAVA_HOME"
            return 0
        fi
        echo "find-jdk: JAVA_HOME=$JAVA_HOME is ${major:+JDK $major, }not a JDK $FIND_JDK_MIN+: looking further" >&2
    fi
    for c in "$(jdk_home_of javac)" "$(jdk_home_of java)"; do
        if [[ -n "$c" ]] && major=$(jdk_major "$c") && ((major >= FIND_JDK_MIN)); then
            echo "$c"
            return 0
        fi
    done
    for c in /usr/lib/jvm/*/; do
        c=$(readlink -f "$c")
        [[ "$seen" == *" $c "* ]] && continue
        seen+="$c "
        major=$(jdk_major "$c") || continue
        if ((major >= FIND_JDK_MIN && major > best_major)); then
            best=$c best_major=$major
        fi
    done
    if [[ -n "$best" ]]; then
        echo "$best"
        return 0
    fi
    echo "find-jdk: no JDK $FIND_JDK_MIN or newer (looked at JAVA_HOME, javac and java on PATH, /usr/lib/jvm/*)" >&2
    return 1
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    find_jdk
fi
