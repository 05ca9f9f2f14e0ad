# Debian packages unpacked without installing them, for the bundles carried to the GPU host (podman-bundle.sh,
# cri-bundle.sh, build-bundle.sh). Source it after lib.sh and setting SUITE, CACHE, MIRROR, STAGE and log/die; it sets
# apt_opts.
#   fetch_packages PKG...   the Depends/Pre-Depends closure of PKG... downloaded (private apt state under CACHE, a
#                           folder for us only (private_dir), so the machine's own apt is untouched) and unpacked with
#                           dpkg -x into ROOTFS=$STAGE/rootfs; "$STAGE/versions" gets "package version" per package
#   verified_deb PKG        the .deb of PKG that apt-get download saved, checked against apt's index
#   find_lib NAME           the path of a shared library in ROOTFS
#   copy_needed_closure DEST ELF...   the DT_NEEDED closure of the ELFs, glibc's libraries left out, into DEST
# glibc's libraries are the host's own: its glibc (2.39) is at least as new as what these binaries need (but for
# build-bundle.sh's criu, run with sid's own loader: it sets GLIBC_RE='^$', leaving nothing out).
GLIBC_RE='^(ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libresolv\.so\.2|libutil\.so\.1|libanl\.so\.1)$'
APT="$CACHE/apt-$SUITE"
DEBS="$CACHE/debs-$SUITE"
apt_opts=(
    -o "Dir::Etc::sourcelist=$APT/sources.list" -o "Dir::Etc::sourceparts=-"
    -o "Dir::State::Lists=$APT/lists" -o "Dir::State::status=$APT/status" -o "Dir::Cache=$APT/cache"
    -o "Acquire::Languages=none" -o "APT::Architecture=amd64" -o "APT::Architectures=amd64"
)

fetch_packages() {
    private_dir "$CACHE" || die "no private folder for the package cache"
    mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$DEBS"
    local key=/usr/share/keyrings/debian-archive-keyring.gpg
    {
        echo "deb [signed-by=$key] $MIRROR $SUITE main"
        if [[ "$SUITE" != sid ]]; then
            echo "deb [signed-by=$key] $MIRROR $SUITE-updates main"
            echo "deb [signed-by=$key] ${MIRROR%/debian}/debian-security $SUITE-security main"
        fi
    } >"$APT/sources.list"
    touch "$APT/status"
    log "apt-get update ($SUITE, private lists in $APT)"
    apt-get "${apt_opts[@]}" -q update >"$STAGE/apt-update.log" 2>&1 || { cat "$STAGE/apt-update.log" >&2; die "apt-get update for $SUITE failed"; }
    mapfile -t PKGS < <(apt-cache "${apt_opts[@]}" depends --recurse --no-recommends --no-suggests \
        --no-conflicts --no-breaks --no-replaces --no-enhances "$@" | grep -v '^ ' | grep -v '^<' | sort -u)
    log "${#PKGS[@]} packages in the dependency closure of $*"
    (cd "$DEBS" && apt-get "${apt_opts[@]}" -q download "${PKGS[@]}" >"$STAGE/apt-download.log" 2>&1) \
        || { cat "$STAGE/apt-download.log" >&2; die "apt-get download failed"; }
    ROOTFS="$STAGE/rootfs"
    mkdir -p "$ROOTFS"
    local pkg deb
    : >"$STAGE/versions"
    for pkg in "${PKGS[@]}"; do
        deb="$(verified_deb "$pkg")" || die "no .deb of $pkg in $DEBS with the name and SHA256 apt's index gives"
        dpkg -x "$deb" "$ROOTFS"
        dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb" >>"$STAGE/versions"
    done
}

# verified_deb PKG: $DEBS/PKG_VERSION_ARCH.deb (a ':' in VERSION as %3a: how apt-get download names it) of PKG's
# candidate version, the one apt-get download fetched, if its SHA256 is the one apt's (signed) index gives
verified_deb() {
    local info sum deb
    info="$(apt-cache "${apt_opts[@]}" show --no-all-versions "$1" | awk -v RS= 'NR == 1')"
    sum="$(sed -n 's/^SHA256: //p' <<<"$info")"
    deb="$(sed -n 's/^Version: //p' <<<"$info")_$(sed -n 's/^Architecture: //p' <<<"$info")"
    deb="$DEBS/$1_${deb//:/%3a}.deb"
    [[ -n "$sum" && -f "$deb" && ! -L "$deb" ]] && sha256sum --status -c - <<<"$sum  $deb" && echo "$deb"
}

find_lib() {
    local name="$1" dir
    for dir in usr/lib/x86_64-linux-gnu lib/x86_64-linux-gnu usr/lib lib usr/lib64 lib64; do
        [[ -e "$ROOTFS/$dir/$name" ]] && { echo "$ROOTFS/$dir/$name"; return 0; }
    done
    return 1
}

copy_needed_closure() {
    local dest="$1" elf name path
    shift
    local -a queue=("$@")
    local -A seen=()
    while ((${#queue[@]})); do
        elf="${queue[0]}"
        queue=("${queue[@]:1}")
        while read -r name; do
            [[ -n "$name" && -z "${seen[$name]:-}" ]] || continue
            seen[$name]=1
            [[ "$name" =~ $GLIBC_RE ]] && continue
            path="$(find_lib "$name")" || die "library $name (needed by $(basename "$elf")) is not in $SUITE's packages"
            cp -L "$path" "$dest/$name"
            queue+=("$dest/$name")
        done < <(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    done
}
