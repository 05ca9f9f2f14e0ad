#!/usr/bin/env bash
# Multi-rank NCCL job checks (issues 31 A, 32) on a host with 2+ GPUs, real criu 4.2.1 from the bundle. One
# "PASS <name>" / "FAIL <name>: <reason>" line per case; exit status non-zero if any failed. Logs packed into
# OUT_DIR/logs.tar.xz (criu's per-page lines left out); OUT_DIR/summary.txt holds PASS/FAIL/INFO/TIME lines.
#
# usage (repo root, on the GPU host): bash integration-tests/gpu/run-multi-rank.sh BUNDLE_DIR OUT_DIR
# Env: RANK_CASES "defaults-refused socket-rounds torchrun-check tp-serving tp-idle-in-collective" (a subset, in order;
#                  the tp-* cases were written in session 11 and have not run on a GPU yet); also "rounds" and
#                  "torchrun-rounds" (socket-rounds on RANK_TRANSPORT's settings, default sockets, the second with the
#                  job started by `criu-gpu run -- torchrun`) and "transport-matrix" (cases_transports.sh: MATRIX_RANKS,
#                  TRANSPORTS, RATE_ONLY, RATE_S; a setting named several times in TRANSPORTS runs that often, and
#                  OUT_DIR/transport-rates.md gives each setting's median step rate and its share of the defaults')
#      RANKS       ranks of the job (default: every GPU), EXTRA_MIB device memory per rank (default 2048)
#      DUMPS       dump -R rounds at random moments (default 3), then RESTORES dump + restore-right-after cycles onto
#                  the job's GPUs rotated by one (default 5); ANOTHER_HOST=1 adds a cycle restored in a fresh network
#                  namespace with the job's GPUs treated as absent (needs twice the job's GPUs); DDP_STEPS (default:
#                  no end: both runs are compared up to a step past the last restore)
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases_ddp.sh"
source "$GPU_DIR/cases_transports.sh"
T_START=$(now_s)

finish() { ddp_finish; }
trap 'fail interrupted "stopped by a signal (outer timeout?)"; finish' TERM INT

unpack_bundle "$bundle" || { fail setup "cannot unpack $bundle"; finish; }
[[ -n "$PLUGIN_DIR" ]] || { fail setup "the bundle has no plugin dir"; finish; }
build_programs >"$LOGS/build.out" 2>&1 || { fail setup "building the test programs failed (build.out)"; finish; }
NGPU=$(nvidia-smi -L | wc -l)
RANKS="${RANKS:-$NGPU}"
RANKS_ASKED=$RANKS
EXTRA_MIB="${EXTRA_MIB:-2048}"
DUMPS="${DUMPS:-3}"
((NGPU >= 2 && RANKS <= NGPU)) || { fail setup "$NGPU GPU(s) for $RANKS ranks"; finish; }
note "SETUP criu $("$CRIU" --version | awk '/Version/ {print $2}'), $RANKS ranks on $NGPU GPU(s): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort -u | paste -sd';'), $(python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' 2>&1)"

for c in ${RANK_CASES:-defaults-refused socket-rounds torchrun-check tp-serving tp-idle-in-collective}; do
    case "$c" in
        defaults-refused) case_defaults_refused "ddp$RANKS-nccl-defaults-refused" ;;
        socket-rounds) case_socket_rounds "ddp$RANKS-socket" ;;
        rounds)   # the same checks on RANK_TRANSPORT's settings (cases_transports.sh)
            read -r -a JOB_ENV <<<"${TRANSPORT_BASE[*]} $(transport_env "${RANK_TRANSPORT:-sockets}")"
            case_socket_rounds "ddp$RANKS-${RANK_TRANSPORT:-sockets}"; JOB_ENV=() ;;
        torchrun-rounds)   # rounds with the job started by `criu-gpu run -- torchrun ...`
            read -r -a JOB_ENV <<<"${TRANSPORT_BASE[*]} $(transport_env "${RANK_TRANSPORT:-sockets}")"
            LAUNCHER=torchrun; case_socket_rounds "ddp$RANKS-torchrun-${RANK_TRANSPORT:-sockets}"; LAUNCHER=plain; JOB_ENV=() ;;
        transport-matrix)   # MATRIX_RANKS (default "$RANKS") x TRANSPORTS; RATE_ONLY: configurations only timed
            for mr in ${MATRIX_RANKS:-$RANKS}; do
                port=29800
                for t in ${TRANSPORTS:-defaults p2p-ipc p2p-memcpy shm-cumem shm-host shm-nocumem sockets}; do
                    port=$((port + 10))
                    transport_row "$mr" "$t" "$port" "$([[ " ${RATE_ONLY:-} " == *" $t "* ]] && echo rate)"
                done
            done
            RANKS="${RANKS_ASKED}"
            transport_rates >"$OUT_DIR/transport-rates.md"; cat "$OUT_DIR/transport-rates.md"
            python3 "$GPU_DIR/rank_phases.py" --header "$LOGS"/t*-R1.dump.log "$LOGS"/t*-c1.dump.log >"$OUT_DIR/transport-phases.tsv" 2>>"$SUMMARY"
            python3 "$GPU_DIR/rank_phases.py" --table "$OUT_DIR/transport-phases.tsv" >"$OUT_DIR/transport-phases.md" 2>>"$SUMMARY" ;;
        torchrun-check) case_torchrun_check "ddp$RANKS-torchrun-check" ;;
        tp-serving) case_tp_serving "tp$RANKS-serving" ;;
        tp-idle-in-collective) case_tp_idle_in_collective "tp$RANKS-idle-in-collective" ;;
        *) fail "$c" "unknown case (RANK_CASES)" ;;
    esac
done
finish
