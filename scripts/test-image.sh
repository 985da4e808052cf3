#!/usr/bin/env bash
# Run a built CPU-flavour image the way users do and hold it to the contract (`make test-image` builds it first).
# Containers get no GPU and no network (--network none): exactly "a container started without --gpus".
#
#   check --json -               exit 11, stdout is the JSON report alone, tool.image names this image
#   check, Kubernetes-style      exit 11, report in a mounted folder, verdict in /dev/termination-log
#   run --cpu-replicas 2 --json -  exit 0, the reference table on stderr digit for digit, JSON alone on stdout
#   SIGTERM during a run         the validator (not tini, not the shell) gets it: exit 50 (TIMEOUT)
#   plus: non-root user, OCI labels, argument pass-through, the entrypoint's stderr-only logging
#
#   the CUDA libraries   FLAVOR=cuda: every library TensorFlow opens on a GPU host loads, from the wheels,
#                        with its version; libcuda and NVML (the host's) are absent. FLAVOR=cpu: not installed
#
# Usage: scripts/test-image.sh IMAGE EXPECTED_VERSION      (ENGINE=podman by default; PYTHON for JSON checks;
#        FLAVOR=cpu|cuda, default cpu)
set -euo pipefail

image=${1:?usage: test-image.sh IMAGE EXPECTED_VERSION}
version=${2:?usage: test-image.sh IMAGE EXPECTED_VERSION}
engine=${ENGINE:-podman}
flavor=${FLAVOR:-cpu}
python=${PYTHON:-python3}
work=$(mktemp -d)
name="tfdist-sigterm-$$"
trap '"${engine}" rm -f "${name}" > /dev/null 2>&1 || true; rm -rf "${work}"' EXIT
failures=0

log() { printf 'test-image: %s\n' "$*" >&2; }
ok() { printf 'ok    %s\n' "$*"; }
bad() { printf 'FAIL  %s\n' "$*"; failures=$((failures + 1)); }

# podman here runs without a daemon: runc directly, and the ulimits spelled out because this sandbox's defaults
# are higher than runc may set. With docker these flags are harmless.
run_flags=(--rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
engine_flags=()
if [[ "${engine}" == podman ]]; then engine_flags=(--runtime runc); fi

# run NAME ARGS...: the container's stdout, stderr and exit code land in ${work}/NAME.{out,err,rc}.
run() {
    local name=$1 rc=0
    shift
    "${engine}" "${engine_flags[@]}" run "${run_flags[@]}" "$@" > "${work}/${name}.out" 2> "${work}/${name}.err" || rc=$?
    echo "${rc}" > "${work}/${name}.rc"
}

show() {
    printf -- '---- %s (exit %s): stderr tail\n' "$1" "$(cat "${work}/$1.rc")"
    tail -n 25 "${work}/$1.err"
}

expect_rc() {
    local name=$1 want=$2 got
    got=$(cat "${work}/${name}.rc")
    if [[ "${got}" == "${want}" ]]; then ok "${name}: exit ${got}"; else bad "${name}: exit ${got}, want ${want}"; show "${name}"; fi
}

# json_check NAME PYTHON-EXPR...: stdout must parse as one JSON document; each expression (over `r`) must hold.
json_check() {
    local name=$1
    shift
    if "${python}" - "${work}/${name}.out" "$@" <<'PY'; then ok "${name}: the report is one JSON document; $# facts hold"; else bad "${name}: JSON checks"; fi
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
try:
    r = json.loads(text)
except ValueError as err:
    print(f"      not one JSON document ({err}); it starts: {text[:200]!r}")
    sys.exit(1)
def check(name):
    return next(c for c in r["checks"] if c["id"] == name)
def libs(status):  # the CUDA-libraries check has this status
    return check("tensorflow.cuda_libraries")["status"] == status
def own():  # the libraries the image itself carries (not the host's libcuda and NVML)
    return [l for l in check("tensorflow.cuda_libraries")["details"]["libraries"] if not l["host"]]
names = {"r": r, "check": check, "libs": libs, "own": own}
failed = [expr for expr in sys.argv[2:] if not eval(expr, names)]
for expr in failed:
    print(f"      does not hold: {expr}")
sys.exit(1 if failed else 0)
PY
}

log "${image}: check"
run check "${image}" check --json -
expect_rc check 11
json_check check \
    'r["verdict"]["code"] == 11' 'r["verdict"]["name"] == "CONTAINER_NO_GPU"' \
    "r[\"tool\"][\"image\"][\"version\"] == \"${version}\"" 'r["tool"]["image"]["revision"] != ""'

log "${image}: check as the Kubernetes manifests run it (report folder, termination log, read-only root)"
mkdir -m 0777 "${work}/reports"
install -m 0666 /dev/null "${work}/termination-log"
hardened=(--read-only --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges)
run check-k8s "${hardened[@]}" -v "${work}/reports:/reports" -v "${work}/termination-log:/dev/termination-log" \
    -e TFDIST_JSON=/reports/report.json "${image}" check
expect_rc check-k8s 11
cp "${work}/reports/report.json" "${work}/check-k8s.out" 2>/dev/null || : > "${work}/check-k8s.out"
json_check check-k8s 'r["verdict"]["code"] == 11'
message=$(cat "${work}/termination-log")
if [[ "${message}" == *CONTAINER_NO_GPU* && ${#message} -le 4096 ]]; then
    ok "termination message (${#message} bytes): ${message:0:100}..."
else
    bad "termination message: '${message:0:300}'"
fi

log "${image}: run --cpu-replicas 2, read-only root as in the manifests (trains the reference model)"
run dry-run "${hardened[@]}" "${image}" run --cpu-replicas 2 --json -
expect_rc dry-run 0
json_check dry-run \
    'r["verdict"]["code"] == 0' 'r["smoke"]["replicas"] == 2' 'r["smoke"]["global_batch"] == 32' \
    '"%.4f" % r["smoke"]["final_val_binary_accuracy"] == "0.9609"'
# The reference document's table (2 replicas, seed 7); with --json - the human output is on stderr.
for line in 'replicas=2' 'global_batch=32' \
    'binary_accuracy: 0.7930 - loss: 0.4713 - val_binary_accuracy: 0.8750 - val_loss: 0.2806' \
    'binary_accuracy: 0.9570 - loss: 0.1509 - val_binary_accuracy: 0.9219 - val_loss: 0.1358' \
    'binary_accuracy: 0.9727 - loss: 0.0716 - val_binary_accuracy: 0.9609 - val_loss: 0.0717' \
    'final_val_binary_accuracy=0.9609'; do
    if grep -qF -- "${line}" "${work}/dry-run.err"; then ok "dry-run prints: ${line}"; else bad "dry-run lacks: ${line}"; fi
done

# The CUDA libraries TensorFlow would open on a GPU host, as the dry run's tensorflow.cuda_libraries check saw
# them (no GPU is needed to find and load them; libcuda and NVML come from the host's driver).
if [[ "${flavor}" == cuda ]]; then
    json_check dry-run 'libs("pass")' 'len(own()) >= 11' \
        'all(l["loads"] and l["path"].startswith("/opt/tfdist/") and l["wheel"] for l in own())' \
        'all(l["version"] for l in own() if not l["soname"].startswith("libcupti"))' \
        'all(l["path"] is None for l in check("tensorflow.cuda_libraries")["details"]["libraries"] if l["host"])' \
        'check("tensorflow.cuda_libraries")["details"]["cuda_wheels"]["nvidia-cudnn-cu12"].startswith("9.")'
    grep -F 'tensorflow.cuda_libraries' "${work}/dry-run.err" | cut -c1-300
else
    json_check dry-run 'libs("skip")' 'check("tensorflow.cuda_libraries")["details"]["cuda_wheels"] == {}'
fi

log "${image}: pass-through and identity"
run exit-codes "${image}" tfdist-validate exit-codes --json
expect_rc exit-codes 0
json_check exit-codes 'any(c["code"] == 11 and c["name"] == "CONTAINER_NO_GPU" for c in r)'
if [[ "$(wc -l < "${work}/exit-codes.err")" -le 1 ]] && grep -q '^tfdist-entrypoint: ' "${work}/exit-codes.err"; then
    ok "the entrypoint logs one line, to stderr"
else
    bad "entrypoint stderr: $(head -c 300 "${work}/exit-codes.err")"
fi
run whoami "${image}" id -u
if [[ "$(cat "${work}/whoami.out")" == 10001 ]]; then ok "runs as uid 10001"; else bad "runs as uid $(cat "${work}/whoami.out")"; fi
run bogus "${image}" no-such-command
expect_rc bogus 2
labels=$("${engine}" image inspect --format \
    '{{index .Labels "org.opencontainers.image.version"}} {{index .Labels "org.opencontainers.image.revision"}}' "${image}")
if [[ "${labels%% *}" == "${version}" && -n "${labels#* }" ]]; then ok "OCI labels: ${labels}"; else bad "OCI labels: '${labels}'"; fi

log "${image}: SIGTERM reaches the validator"
# The stop is sent on an event, not after a fixed time: once the first epoch line is out, training is under
# way (a slow machine may take long to get there; a fast one could finish a short run inside any fixed wait).
# 500 epochs keep it training until the stop, sent the moment the line is seen. The 600 s are hang protection.
"${engine}" "${engine_flags[@]}" run -d --name "${name}" "${run_flags[@]:1}" "${image}" run --cpu-replicas 2 --epochs 500 > /dev/null
give_up=$((SECONDS + 600))
until "${engine}" logs "${name}" 2>/dev/null | grep -q '^Epoch 1/500'; do
    running=$("${engine}" inspect --format '{{.State.Running}}' "${name}" 2>/dev/null || echo false)
    if [[ "${running}" != true || ${SECONDS} -ge ${give_up} ]]; then
        bad "SIGTERM: training never started (running: ${running})"
        break
    fi
    sleep 0.5
done
"${engine}" stop --time 60 "${name}" > /dev/null
rc=$("${engine}" wait "${name}" 2>/dev/null || "${engine}" inspect --format '{{.State.ExitCode}}' "${name}")
"${engine}" logs "${name}" > "${work}/sigterm.err" 2>&1 || true
"${engine}" rm -f "${name}" > /dev/null 2>&1 || true
if [[ "${rc}" == 50 ]] && grep -q '^verdict: 50 TIMEOUT: stopped by SIGTERM' "${work}/sigterm.err"; then
    ok "SIGTERM: the validator printed its verdict and exited 50 within the 60 s grace"
else
    bad "SIGTERM: exit ${rc}, want 50 and the verdict line"
    tail -n 15 "${work}/sigterm.err"
fi

if [[ ${failures} -gt 0 ]]; then
    log "${failures} check(s) failed"
    exit 1
fi
log "all checks passed"
