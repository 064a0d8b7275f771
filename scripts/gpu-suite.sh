#!/usr/bin/env bash
# proofline GPU suite.
#
#   scripts/gpu-suite.sh            on a CPU machine: builds, for sm_90 only and stripped, every
#                                   GPU test binary (proofline-gpu's, the stage regression test),
#                                   proofline-gpu-bench, proofline-harness, proofline and
#                                   fil-fixture, and packs them with the kernel cubins into
#                                   .gpu-bin/ (one xz archive, kept under 64 MiB)
#   scripts/gpu-suite.sh device [PHASE...]
#                                   on the GPU machine: unpacks .gpu-bin/ and runs the phases
#                                   (default: tests harness porep), writes logs and JSON under
#                                   $OUT (default ./gpu-out), prints a short table last.
#
# Phases:
#   kernels  the kernels in one device call of at most 8 minutes: proofline-gpu's
#            GPU tests (every kernel and variant equal to the CPU on random inputs and the PoRep
#            mixes: Fr/Fp/Fp2, G1 and G2 operations, NTT, the H sequence separate and fused, dense,
#            sparse and precomputed G1 MSMs, G2 MSMs; whole proofs through the slot stages with B
#            in G2 on the GPU and resident sets with precomputed H copies), then the benchmark
#            with every variant side by side (--variants) and the 32 GiB-shape partition at the
#            8 MiB PoRep mix; each step under its own limit, all under KERNELS_BUDGET seconds
#            (default 420: a step starts only while 15 s are left, and gets at most what is left).
#            Steps, expected time on an H200 and [limit]:
#              test-lib          unit tests (the host emulation's skipped)          ~10 s  [45]
#              test-gpu          GPU == CPU up to 2^KERNELS_TEST_MAX_LOG (22)        ~70 s [120]
#              test-proof        whole proofs, resident/streamed/precomputed         ~60 s  [90]
#              bench-ntt         NTT 2^24..2^27, H sequence, per variant             ~20 s  [60]
#              bench-msm         dense G1 2^24..2^26, both sorts, precomputed        ~40 s  [90]
#              bench-sparse      sparse G1 2^24 / 2^26 (60/30/10 mix) per variant    ~20 s  [45]
#              bench-g2          G2 MSM dense 2^20, the B mix over 2^24, variants    ~20 s  [45]
#              bench-partition   32 GiB shape, 8 MiB mix, B in G2, per variant       ~70 s [150]
#            about 5 minutes in all; the table of every benchmark is printed last.
#            KERNELS_SECTIONS (default "ntt msm sparse g2 partition") picks the benchmark steps.
#   tests    every GPU test binary (kernels == CPU, whole proofs through the slot stages with the
#            pool's high-water mark against the leases, and the regression test: two slots with
#            partitions in flight while the allocator trims, no device-global call overlapping a
#            slot's work)
#   harness  the stage harness, 32 GiB shape, 1, 2 and 4 compute slots per GPU, B in G2 in the
#            GPU's sparse stage (HARNESS_G2=skip: the G1 side alone): partitions per minute,
#            kernel-busy fraction, peak device memory, OOM errors (HARNESS_SHAPE, HARNESS_SLOTS,
#            HARNESS_PARTITIONS, HARNESS_G2; HARNESS_SLOT_KERNELS, default in-turn: the slots'
#            kernels in turn, concurrent, or both side by side as "in-turn,concurrent";
#            HARNESS_PAIR_SUMS, default off: the resident sets' ones' pair sums (where-room) or
#            triple sums (triples-where-room), or several side by side as "off,where-room";
#            HARNESS_HELD_TAILS, default where-room: the G1 tails held on the device, or off, or
#            both side by side as "off,where-room")
#   porep    2 KiB porep-c2 jobs over HTTP, parameters preloaded (resident) at start, three
#            in a row per synthesis mode (POREP_MODES, default "plain precompiled", one daemon
#            each); the last job's latency is the figure (in "precompiled" the first job
#            records the shape's constraints)
#   porep-load  LOAD_JOBS (default 200) 2 KiB porep-c2 jobs submitted at once to a daemon on the
#            default configuration (pre-compiled synthesis, "auto" pools): jobs per minute
#   bench    proofline-gpu-bench (kernels alone; BENCH_ARGS)
#
# Device-tool calls (this workplace), e.g. one phase per call to stay within 10 minutes:
#   run carry=[".gpu-bin"] timeout_s=480 command="bash scripts/gpu-suite.sh device kernels"
#   run carry=[".gpu-bin"] command="bash scripts/gpu-suite.sh device tests"
#   run carry=[".gpu-bin"] command="bash scripts/gpu-suite.sh device harness porep"
#   run kind="nvidia-h200-x2" carry=[".gpu-bin"] command="bash scripts/gpu-suite.sh device harness"
# Environment: PROOFLINE_GPU_TEST_MAX_LOG (default 24), TEST_TIMEOUT / HARNESS_TIMEOUT /
#   BENCH_TIMEOUT (seconds), OUT; kernels: KERNELS_BUDGET, KERNELS_TEST_MAX_LOG, BENCH_ARGS
#   (extra arguments of every benchmark step), SKIP_TESTS=1, SKIP_BENCH=1.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.gpu-bin"
# shellcheck source=scripts/gpu-build-env.sh
source "$ROOT/scripts/gpu-build-env.sh"

build() {
    set -e
    cd "$ROOT"
    gpu_build_env "$ROOT"
    local stage
    stage="$(mktemp -d)"
    mkdir -p "$stage/bin" "$stage/cubins"
    {
        cargo test -p proofline-gpu --features testkit --release --no-run --message-format=json | list_tests
        cargo test -p proofline-integration --release --no-run --test stages --message-format=json | list_tests
    } > "$stage/tests.txt"
    while read -r kind name exe; do
        cp "$exe" "$stage/bin/test-$kind-$name"
    done < "$stage/tests.txt"
    cargo build --release -p proofline-gpu --features testkit --bin proofline-gpu-bench
    cargo build --release -p proofline-integration --bin proofline-harness
    cargo build --release -p proofline --bin proofline
    cargo build --release -p proofline-filecoin --bin fil-fixture
    for b in proofline-gpu-bench proofline-harness proofline fil-fixture; do
        cp "$CARGO_TARGET_DIR/release/$b" "$stage/bin/"
    done
    strip "$stage"/bin/* 2>/dev/null || true
    # the embedded cubins, for SASS checks on the device
    find "$CARGO_TARGET_DIR/release/build" -path '*proofline-gpu-*/out/*' -name '*.sm_90.cubin' -newer "$stage/tests.txt" -exec cp {} "$stage/cubins/" \; 2>/dev/null || true
    if [[ -z "$(ls "$stage/cubins")" ]]; then
        find "$CARGO_TARGET_DIR/release/build" -path '*proofline-gpu-*/out/*' -name '*.sm_90.cubin' -exec cp {} "$stage/cubins/" \;
    fi
    local commit
    commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if [[ -n "$(git -C "$ROOT" status --porcelain -- cuda crates actors integration scripts 2>/dev/null)" ]]; then
        commit="$commit+uncommitted"
    fi
    echo "$commit" > "$stage/commit.txt"
    rm -rf "$BIN" && mkdir -p "$BIN"
    tar -C "$stage" -cJf "$BIN/suite.tar.xz" bin cubins commit.txt
    cp "$stage/commit.txt" "$BIN/"
    rm -rf "$stage"
    ls -la "$BIN"
    local size
    size=$(du -sm "$BIN" | cut -f1)
    echo ".gpu-bin: ${size} MiB (commit $(cat "$BIN/commit.txt"))"
    if (( size >= 64 )); then
        echo "error: .gpu-bin is over the 64 MiB the device tool carries" >&2
        exit 1
    fi
}

# ---- device side ----------------------------------------------------------------------

WORK=""
SUMMARY=""

unpack() {
    WORK="$(mktemp -d /tmp/proofline-suite.XXXXXX)"
    tar -C "$WORK" -xJf "$BIN/suite.tar.xz"
}

note() { echo "$*" | tee -a "$SUMMARY"; }

phase_tests() {
    export PROOFLINE_GPU_TEST_MAX_LOG="${PROOFLINE_GPU_TEST_MAX_LOG:-24}"
    local status=0
    for t in "$WORK"/bin/test-*; do
        [[ -x "$t" ]] || continue
        local name start rc
        name=$(basename "$t")
        start=$(date +%s)
        local args=(--test-threads="${TEST_THREADS:-2}" --nocapture)
        # the host emulation's tests compile the kernels with a C++ compiler against headers of
        # the build machine: CI's job, not the device's
        [[ $name == test-lib-* ]] && args+=(--skip emu::)
        timeout "${TEST_TIMEOUT:-400}" "$t" "${args[@]}" > "$OUT/$name.log" 2>&1
        rc=$?
        [[ $rc == 0 ]] || status=1
        note "test $name: rc=$rc $(grep -o '[0-9]* passed' "$OUT/$name.log" | tail -n1), $(grep -o '[0-9]* failed' "$OUT/$name.log" | tail -n1) ($(( $(date +%s) - start )) s)"
        grep -E "panicked|FAILED|SKIP|pool high-water" "$OUT/$name.log" | head -n 8 | tee -a "$SUMMARY"
    done
    # the regression test's own table (devices, trims, overlaps)
    grep -A4 '^shape ' "$OUT"/test-test-stages.log 2>/dev/null | head -n 6 | tee -a "$SUMMARY"
    return $status
}

phase_kernels() {
    local t0 budget status=0 logs="$OUT/kernels"
    t0=$(date +%s)
    budget="${KERNELS_BUDGET:-420}"
    mkdir -p "$logs"
    : > "$OUT/kernels-tables.txt"
    # step NAME LIMIT COMMAND...: COMMAND under min(LIMIT, what is left of the budget), output
    # to kernels/NAME.log; its exit status and seconds go to the summary
    step() {
        local name=$1 limit=$2
        shift 2
        local left=$((budget - ($(date +%s) - t0)))
        if ((left < 15)); then
            note "step $name: SKIPPED (budget spent)"
            status=1
            return
        fi
        ((limit > left)) && limit=$left
        local s rc note_=""
        s=$(date +%s)
        timeout "$limit" "$@" > "$logs/$name.log" 2>&1
        rc=$?
        ((rc == 0)) || status=1
        ((rc == 124)) && note_=" TIMEOUT after ${limit}s"
        note "step $name: rc=$rc $(($(date +%s) - s)) s$note_"
    }
    if [[ "${SKIP_TESTS:-0}" != 1 ]]; then
        local t name limit
        for t in "$WORK"/bin/test-lib-proofline_gpu "$WORK"/bin/test-test-gpu "$WORK"/bin/test-test-proof; do
            [[ -x "$t" ]] || { note "missing $(basename "$t")"; status=1; continue; }
            name=$(basename "$t")
            local args=(--test-threads="${TEST_THREADS:-2}")
            case "$name" in
                # the host emulation's tests compile the kernels with a C++ compiler: CI's job
                test-lib-*) limit=45; args+=(--skip emu::) ;;
                *proof*) limit=90 ;;
                *) limit=120 ;;
            esac
            step "$name" "$limit" env PROOFLINE_GPU_TEST_MAX_LOG="${KERNELS_TEST_MAX_LOG:-22}" "$t" "${args[@]}"
            {
                echo "  $(grep -o '[0-9]* passed' "$logs/$name.log" | tail -n1), $(grep -o '[0-9]* failed' "$logs/$name.log" | tail -n1)"
                grep -E "panicked|FAILED|seed =" "$logs/$name.log" | head -n 8
            } | tee -a "$SUMMARY"
        done
    fi

    if [[ "${SKIP_BENCH:-0}" != 1 ]]; then
        local b="$WORK/bin/proofline-gpu-bench" sec
        for sec in ${KERNELS_SECTIONS:-ntt msm sparse g2 partition}; do
            # shellcheck disable=SC2086
            case "$sec" in
                ntt) step bench-ntt 60 "$b" --variants --sections ntt --ntt-min 24 --ntt-max 27 --json "$OUT/bench-ntt.json" ${BENCH_ARGS:-} ;;
                msm) step bench-msm 90 "$b" --variants --sections msm --msm-min 24 --msm-max 26 --json "$OUT/bench-msm.json" ${BENCH_ARGS:-} ;;
                sparse) step bench-sparse 45 "$b" --variants --sections sparse --msm-max 26 --json "$OUT/bench-sparse.json" ${BENCH_ARGS:-} ;;
                g2) step bench-g2 45 "$b" --variants --sections g2 --json "$OUT/bench-g2.json" ${BENCH_ARGS:-} ;;
                partition) step bench-partition 150 "$b" --variants --sections partition --partition-mix 8mib --json "$OUT/bench-partition.json" ${BENCH_ARGS:-} ;;
                *) note "unknown benchmark section $sec"; status=1 ;;
            esac
        done
        for sec in ntt msm sparse g2 partition; do
            [[ -f "$logs/bench-$sec.log" ]] || continue
            # the table is the tail of the log, after the JSON (the header and the multiply
            # throughput once)
            awk '/^benchmark /{p=1} p' "$logs/bench-$sec.log" \
                | { if [[ $sec == ntt ]]; then cat; else tail -n +2 | grep -v '^F[rp] mul '; fi; } >> "$OUT/kernels-tables.txt"
            grep -h "failed" "$logs/bench-$sec.log" | head -n 3 | tee -a "$SUMMARY"
        done
    fi
    note "kernels: $(($(date +%s) - t0)) s"
    # one archive of the logs (the device tool returns few files)
    tar -C "$OUT" -czf "$OUT/kernels-logs.tgz" kernels && rm -rf "$logs"
    return $status
}

phase_harness() {
    local json="$OUT/harness-${HARNESS_SHAPE:-32gib}.json"
    timeout "${HARNESS_TIMEOUT:-560}" "$WORK/bin/proofline-harness" --mode stages \
        --shape "${HARNESS_SHAPE:-32gib}" --slots "${HARNESS_SLOTS:-1,2,4}" \
        --partitions "${HARNESS_PARTITIONS:-24}" --g2 "${HARNESS_G2:-run}" --backend gpu \
        --slot-kernels "${HARNESS_SLOT_KERNELS:-in-turn}" \
        --ones-pair-sums "${HARNESS_PAIR_SUMS:-off}" --held-tails "${HARNESS_HELD_TAILS:-where-room}" \
        --timeout-s "${HARNESS_RUN_TIMEOUT:-150}" --json "$json" > "$OUT/harness.log" 2> "$OUT/harness.err"
    local rc=$?
    note "harness rc=$rc"
    tail -n 3 "$OUT/harness.err" | tee -a "$SUMMARY"
    awk '/^shape /{p=1} p' "$OUT/harness.log" > "$OUT/harness-table.txt"
    return $rc
}

http() { # METHOD URL [BODY_FILE] -> body on stdout
    python3 - "$@" <<'EOF'
import sys, urllib.request
method, url = sys.argv[1], sys.argv[2]
data = open(sys.argv[3], "rb").read() if len(sys.argv) > 3 else None
req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
try:
    print(urllib.request.urlopen(req, timeout=900).read().decode())
except urllib.error.HTTPError as e:
    print(e.read().decode()); sys.exit(1)
EOF
}

phase_porep() {
    local fil="$WORK/fil" rc=0
    mkdir -p "$fil"
    if ! timeout 300 "$WORK/bin/fil-fixture" --cache "$fil" --c1-out "$WORK/c2.json" > "$OUT/porep-fixture.log" 2>&1; then
        note "porep: fil-fixture failed (see porep-fixture.log)"; return 1
    fi
    local params_dir mode
    params_dir="$(dirname "$(find "$fil" -name 'v28-stacked-proof-of-replication*.params' | head -n1)")"
    # each synthesis mode in its own daemon, side by side in this call; in "precompiled" the
    # first job records the shape's constraints and the later ones use them
    for mode in ${POREP_MODES:-plain precompiled}; do
        porep_daemon "$params_dir" "$mode" || rc=1
    done
    return $rc
}

porep_daemon() { # PARAMS_DIR SYNTHESIS_MODE
    local params_dir="$1" mode="$2" port=9797 rc=0
    PROOFLINE_SERVER__BIND="127.0.0.1:$port" PROOFLINE_FILECOIN__PARAMS_DIR="$params_dir" \
        PROOFLINE_FILECOIN__VERIFY_DIGESTS=false PROOFLINE_PARAMS__PRELOAD=StackedDrg2KiBV1_1 \
        PROOFLINE_PIPELINE__SYNTHESIS_MODE="$mode" \
        PROOFLINE_STATE__STORE=memory "$WORK/bin/proofline" serve > "$OUT/porep-daemon-$mode.log" 2>&1 &
    local daemon=$!
    local up=0
    for _ in $(seq 1 120); do
        if http GET "http://127.0.0.1:$port/healthz" > "$OUT/porep-healthz.json" 2>/dev/null \
            && grep -q '"resident"' "$OUT/porep-healthz.json" \
            && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if any(m.get("resident") for m in d.get("memory", [])) else 1)' "$OUT/porep-healthz.json"; then
            up=1; break
        fi
        sleep 1
    done
    note "porep ($mode): parameters resident at start: $([[ $up == 1 ]] && echo yes || echo NO)"
    for k in 1 2 3; do
        local t0 id
        t0=$(date +%s.%N)
        id=$(http POST "http://127.0.0.1:$port/v1/jobs" "$WORK/c2.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') || { rc=1; break; }
        http GET "http://127.0.0.1:$port/v1/jobs/$id?wait_s=600" > "$OUT/porep-$mode-job$k.json"
        local t1
        t1=$(date +%s.%N)
        python3 - "$OUT/porep-$mode-job$k.json" "$t0" "$t1" "$k" "$mode" <<'EOF' | tee -a "$SUMMARY"
import json, sys
s = json.load(open(sys.argv[1])); t = s["timings"]
print(f"porep-c2 2KiB {sys.argv[5]} job {sys.argv[4]}: {s['state']}, {float(sys.argv[3]) - float(sys.argv[2]):.2f} s end to end; "
      f"synthesis {t['synthesis_s']:.2f}, params {t['params_s']:.2f}, H {t['h_s']:.3f}, G1 {t['msm_g1_s']:.3f}, "
      f"G2 {t['msm_g2_s']:.3f}, lease wait {t['lease_wait_s']:.3f}, partition {t['total_s']:.2f} s")
EOF
        grep -q '"succeeded"' "$OUT/porep-$mode-job$k.json" || rc=1
    done
    http GET "http://127.0.0.1:$port/healthz" > "$OUT/porep-healthz-after-$mode.json" || true
    kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null
    return $rc
}

phase_porep_load() {
    # many 2 KiB porep-c2 jobs in flight on the default configuration ("auto" workers, slots and
    # admission; pre-compiled synthesis, the shape recorded by a first job): jobs per minute
    local fil="$WORK/fil" port=9798 rc=0 n="${LOAD_JOBS:-200}"
    mkdir -p "$fil"
    if [[ ! -f "$WORK/c2.json" ]] && ! timeout 300 "$WORK/bin/fil-fixture" --cache "$fil" --c1-out "$WORK/c2.json" > "$OUT/porep-fixture.log" 2>&1; then
        note "porep-load: fil-fixture failed (see porep-fixture.log)"; return 1
    fi
    local params_dir
    params_dir="$(dirname "$(find "$fil" -name 'v28-stacked-proof-of-replication*.params' | head -n1)")"
    PROOFLINE_SERVER__BIND="127.0.0.1:$port" PROOFLINE_FILECOIN__PARAMS_DIR="$params_dir" \
        PROOFLINE_FILECOIN__VERIFY_DIGESTS=false PROOFLINE_PARAMS__PRELOAD=StackedDrg2KiBV1_1 \
        PROOFLINE_STATE__STORE=memory "$WORK/bin/proofline" serve > "$OUT/porep-load-daemon.log" 2>&1 &
    local daemon=$!
    for _ in $(seq 1 120); do
        http GET "http://127.0.0.1:$port/healthz" > /dev/null 2>&1 && break
        sleep 1
    done
    python3 - "http://127.0.0.1:$port" "$WORK/c2.json" "$n" "$OUT/porep-load.json" <<'EOF' | tee -a "$SUMMARY" || rc=1
import json, sys, time, urllib.request
base, body, n, out = sys.argv[1], open(sys.argv[2], "rb").read(), int(sys.argv[3]), sys.argv[4]
def call(method, path, data=None):
    req = urllib.request.Request(base + path, data=data, method=method, headers={"content-type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=900).read())
def run(count):
    t0 = time.time()
    ids = [call("POST", "/v1/jobs", body)["id"] for _ in range(count)]
    states = [call("GET", f"/v1/jobs/{i}?wait_s=600")["state"] for i in ids]
    return time.time() - t0, states
run(1)  # records the shape's constraints
wall, states = run(n)
ok = states.count("succeeded")
page = call("GET", "/v1/status")
res = {"jobs": n, "succeeded": ok, "wall_s": wall, "jobs_per_min": ok / wall * 60,
       "actors": {a["actor"]: a["threads"] for a in page["actors"]},
       "stages": {s["stage"]: round(s["seconds_total"] / max(1, s["count"]), 4) for s in page["stages"]}}
json.dump(res, open(out, "w"), indent=1)
print(f"porep-c2 2KiB load: {ok}/{n} succeeded in {wall:.1f} s = {res['jobs_per_min']:.0f} jobs/min; "
      f"threads {res['actors']}; mean stage s {res['stages']}")
sys.exit(0 if ok == n else 1)
EOF
    kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null
    return $rc
}

phase_bench() {
    # shellcheck disable=SC2086
    timeout "${BENCH_TIMEOUT:-400}" "$WORK/bin/proofline-gpu-bench" --json "$OUT/bench.json" ${BENCH_ARGS:-} > "$OUT/bench.log" 2> "$OUT/bench.err"
    local rc=$?
    note "bench rc=$rc"
    awk '/^benchmark /{p=1} p' "$OUT/bench.log" > "$OUT/bench-table.txt"
    return $rc
}

device() {
    OUT="${OUT:-$ROOT/gpu-out}"
    mkdir -p "$OUT"
    SUMMARY="$OUT/summary.txt"
    : > "$SUMMARY"
    cd "$ROOT"
    unpack
    {
        echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
        echo "commit: $(cat "$WORK/commit.txt" 2>/dev/null || echo unknown)"
        nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
        echo "cpus: $(nproc), memory: $(free -g | awk '/^Mem:/{print $2}') GiB"
    } | tee -a "$SUMMARY"
    if command -v cuobjdump >/dev/null; then
        for f in "$WORK"/cubins/*.sm_90.cubin; do
            [[ -f "$f" ]] || continue
            note "sass $(basename "$f"): IMAD.WIDE.U32.X x $(cuobjdump -sass "$f" | grep -c 'IMAD.WIDE.U32.X')"
        done
    fi
    local status=0 phases=("$@")
    [[ ${#phases[@]} -gt 0 ]] || phases=(tests harness porep)
    for p in "${phases[@]}"; do
        case "$p" in
            tests|harness|porep|bench|kernels) "phase_$p" || status=1 ;;
            porep-load) phase_porep_load || status=1 ;;
            *) echo "unknown phase $p (tests, harness, porep, bench, kernels)" >&2; status=2 ;;
        esac
    done
    rm -rf "$WORK"
    echo
    echo "==== proofline GPU suite summary ===="
    cat "$SUMMARY"
    for t in harness-table bench-table kernels-tables; do
        [[ -s "$OUT/$t.txt" ]] && { echo; cat "$OUT/$t.txt"; }
    done
    return $status
}

case "${1:-build}" in
    device) shift; device "$@" ;;
    build) build ;;
    *) echo "usage: $0 [build | device [tests|harness|porep|bench|kernels]...]" >&2; exit 2 ;;
esac
