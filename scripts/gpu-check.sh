#!/usr/bin/env bash
# The day a GPU host is at hand: prove the validator on it and bring everything back in one tarball.
#
#   scripts/gpu-check.sh [OUT]            (make gpu-check; OUT defaults to gpu-check-<host>-<time>)
#
# With GPUs and TensorFlow it runs, each step under its own timeout (the whole script stays under 8 minutes):
#   check                         every GPU, the fast layers
#   run                           every GPU, the smoke test (--min-gpus = the GPUs nvidia-smi lists)
#   run --devices <subset>        the first half of the GPUs (GPU 1 alone on a 2-GPU host)
#   run --allreduce-mib 1/8/64    the bandwidth check at three sizes (1 epoch each: the table is not the point)
# Without TensorFlow (`check` exits 20) or without a GPU, it still runs what can run there: `check` (the NVML
# layers), `replay` of the project's recorded hosts (tests/fixtures/matrix), and it saves what NVML and
# nvidia-smi say as fixture candidates (scripts/nvml-dump.py; nvidia-smi -L, -q, -q -x, topo -m, the
# --query-gpu CSV). The reports, the smoke-test child's logs (TMPDIR points into OUT), nvidia-smi's outputs and
# summary.txt go into OUT and OUT.tar.gz; the last line says what ran and where it all is.
#
# Environment:
#   TFDIST   the validator's command (default: tfdist-validate on PATH, else $PYTHON -m tfdist_validate with
#            this checkout's src/ on PYTHONPATH). The CUDA image, with OUT mounted at the same path:
#            TFDIST="docker run --rm --gpus all --shm-size=1g -e TMPDIR -v $PWD/out:$PWD/out IMAGE" ... OUT=$PWD/out
#   PYTHON   for the helpers (JSON, the NVML dump; default python3)
#   GPU_CHECK_SCALE  multiplies every step's timeout and the budget (default 1; a first start on H100/H200
#            JIT-compiles for long: see README "The first start on Hopper and newer")
#   GPU_CHECK_BUDGET_S  no step starts that could end past it (default 470 s, scaled): the 8 minutes hold
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-python3}
scale=${GPU_CHECK_SCALE:-1}
out=${1:-gpu-check-$(hostname -s 2> /dev/null || echo host)-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "${out}"
out=$(cd "${out}" && pwd)
mkdir -p "${out}/reports" "${out}/logs" "${out}/tmp" "${out}/nvidia-smi" "${out}/fixture-candidates" "${out}/replay"
summary="${out}/summary.txt"
: > "${summary}"
started=${SECONDS}

if [[ -n "${TFDIST:-}" ]]; then
    read -r -a tfdist <<< "${TFDIST}"
elif command -v tfdist-validate > /dev/null 2>&1; then
    tfdist=(tfdist-validate)
else
    export PYTHONPATH="${repo}/src${PYTHONPATH:+:${PYTHONPATH}}"
    tfdist=("${python}" -m tfdist_validate)
fi

note() { printf 'gpu-check: %s\n' "$*" | tee -a "${summary}" >&2; }

# seconds SECONDS: a step's timeout, scaled
seconds() { "${python}" -c 'import sys; print(max(1, int(float(sys.argv[1]) * float(sys.argv[2]))))' "$1" "${scale}"; }

# verdict REPORT: "NAME: summary" of a report, or why there is none
verdict() {
    "${python}" - "$1" << 'EOF' 2> /dev/null || echo "no report"
import json, sys
verdict = json.load(open(sys.argv[1]))["verdict"]
print(f"{verdict['name']}: {verdict['summary']}")
EOF
}

# step NAME TIMEOUT_S ARGS...: the validator with ARGS; its report, stdout/stderr and child logs land in OUT.
# The validator's own --timeout is the step's less 15 s, so it writes its report before `timeout` would kill it.
# A step that could not finish within the whole script's budget is not started (its note says so).
budget=$(seconds "${GPU_CHECK_BUDGET_S:-470}")
step_rc=0
step() {
    local name=$1 limit start rc=0
    limit=$(seconds "$2")
    shift 2
    if ((SECONDS - started + limit > budget)); then
        note "$(printf '%-16s skipped: %ss would pass the %ss budget' "${name}" "${limit}" "${budget}")"
        step_rc=124
        return
    fi
    start=${SECONDS}
    mkdir -p "${out}/tmp/${name}"
    TMPDIR="${out}/tmp/${name}" timeout --kill-after=10 "${limit}" "${tfdist[@]}" "$@" \
        --timeout "$((limit > 30 ? limit - 15 : limit))" \
        --json "${out}/reports/${name}.json" --termination-log "${out}/reports/${name}.termination-log" \
        > "${out}/logs/${name}.stdout" 2> "${out}/logs/${name}.stderr" || rc=$?
    note "$(printf '%-16s exit %-3s %4ss  %s' "${name}" "${rc}" "$((SECONDS - start))" "$(verdict "${out}/reports/${name}.json")")"
    step_rc=${rc}
}

# ---- what the driver says: nvidia-smi's outputs (as fixture candidates too) and NVML through pynvml
smi() { # smi FILE ARGS...
    local file=$1 rc=0
    shift
    timeout 15 nvidia-smi "$@" > "${out}/nvidia-smi/${file}" 2>&1 || rc=$?
    [[ ${rc} == 0 ]] || echo "(nvidia-smi $* exited ${rc})" >> "${out}/nvidia-smi/${file}"
}
gpus=0
if command -v nvidia-smi > /dev/null 2>&1; then
    smi L.txt -L
    smi q.txt -q
    smi q-x.xml -q -x
    smi topo-m.txt topo -m
    smi nvlink-s.txt nvlink -s
    smi table.txt
    smi query-compute-apps.csv --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv
    fields=$(head -n 1 "${repo}/tests/fixtures/real/nvidia-smi-query-csv_h200_590.48.01.csv" 2> /dev/null \
        | sed -e 's/ \[[^]]*\]//g' -e 's/, /,/g' || true)
    # every field the recorded H200 capture has; an older driver that lacks one gets the fields the tests read
    smi query-gpu.csv --query-gpu="${fields:-name}" --format=csv
    if ! grep -q '^timestamp' "${out}/nvidia-smi/query-gpu.csv"; then
        smi query-gpu.csv --format=csv --query-gpu=index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total,memory.used,compute_mode,mig.mode.current,remapped_rows.correctable,remapped_rows.uncorrectable,fabric.state,fabric.status,clocks_event_reasons.active
    fi
    gpus=$(grep -c '^GPU [0-9]' "${out}/nvidia-smi/L.txt" || true)
    note "nvidia-smi lists ${gpus} GPU(s): $(head -n 1 "${out}/nvidia-smi/L.txt")"
else
    note "no nvidia-smi on PATH"
fi
timeout 30 "${python}" "${repo}/scripts/nvml-dump.py" > "${out}/fixture-candidates/nvml.json" 2> "${out}/logs/nvml-dump.stderr" \
    || note "the NVML dump failed (see logs/nvml-dump.stderr)"
cp "${out}"/nvidia-smi/* "${out}/fixture-candidates/" 2> /dev/null || true
{
    echo "date: $(date -u +%FT%TZ)"
    echo "kernel: $(uname -a)"
    echo "validator: ${tfdist[*]}"
    "${tfdist[@]}" --version 2>&1 || true
} > "${out}/environment.txt"

# ---- the validator on every GPU, then a subset, then the bandwidth at three sizes
step check 60 check --min-gpus "$((gpus > 0 ? gpus : 1))"
check_rc=${step_rc}
ran="check"
if [[ ${gpus} -gt 0 && ${check_rc} != 20 && ${check_rc} != 1 && ${check_rc} != 124 ]]; then
    step run 150 run --min-gpus "${gpus}"
    if [[ ${gpus} -ge 2 ]]; then
        half=$((gpus / 2))
        if [[ ${gpus} -eq 2 ]]; then subset=1; else subset=$(seq -s, 0 $((half - 1))); fi
        step run-devices 100 run --devices "${subset}" --min-gpus "$((gpus == 2 ? 1 : half))"
        for mib in 1 8 64; do
            step "bandwidth-${mib}mib" 45 run --epochs 1 --min-gpus "${gpus}" --allreduce-mib "${mib}"
        done
        ran+=", run, run --devices ${subset}, bandwidth at 1/8/64 MiB"
    else
        ran+=", run (one GPU: no subset, no bandwidth)"
    fi
elif [[ ${gpus} -eq 0 ]]; then
    note "no GPU listed: the smoke test and the bandwidth runs are skipped"
else
    note "check exited ${check_rc} (20: TensorFlow cannot be imported): the smoke test is skipped"
fi

# ---- the recorded hosts, replayed with this host's validator: what the NVML and TensorFlow layers decide
replayed=0
agreed=0
if compgen -G "${repo}/tests/fixtures/matrix/*.json" > /dev/null; then
    mkdir -p "${out}/replay/in"
    cp "${repo}"/tests/fixtures/matrix/*.json "${out}/replay/in/"
    for report in "${out}"/replay/in/*.json; do
        if ((SECONDS - started + 10 > budget)); then
            note "replays stopped: the ${budget}s budget is spent"
            break
        fi
        name=$(basename "${report}" .json)
        want=$("${python}" -c 'import json, sys; print(json.load(open(sys.argv[1]))["verdict"]["code"])' "${report}")
        got=0
        timeout 10 "${tfdist[@]}" replay "${report}" --json "${out}/replay/${name}.json" \
            --termination-log "${out}/replay/${name}.termination-log" > /dev/null 2> "${out}/replay/${name}.stderr" || got=$?
        replayed=$((replayed + 1))
        if [[ "${got}" == "${want}" ]]; then agreed=$((agreed + 1)); else note "replay ${name}: exit ${got}, recorded ${want}"; fi
    done
    note "replayed ${agreed} of ${replayed} recorded hosts to their recorded verdicts"
    ran+=", replay of ${replayed} recorded hosts"
fi

# ---- one folder, one tarball
tar -czf "${out}.tar.gz" -C "$(dirname "${out}")" "$(basename "${out}")"
elapsed=$((SECONDS - started))
if [[ ${gpus} -eq 0 ]]; then
    note "done in ${elapsed}s: NO GPU on this host (nvidia-smi listed none); ran ${ran}; everything is in ${out}.tar.gz"
else
    note "done in ${elapsed}s on ${gpus} GPU(s): ran ${ran}; everything is in ${out}.tar.gz"
fi
