#!/usr/bin/env bash
# The image's entrypoint, started by tini (PID 1). It only decides what to exec; the validator then replaces
# this shell, so tini's forwarded SIGTERM reaches tfdist-validate itself, which writes its verdict and exits.
#
#   docker run IMAGE                        -> tfdist-validate run
#   docker run IMAGE check --json -         -> tfdist-validate check --json -   (JSON alone on stdout)
#   docker run IMAGE --cpu-replicas 2       -> tfdist-validate --cpu-replicas 2 (the CLI assumes `run`)
#   docker run IMAGE tfdist-validate check  -> tfdist-validate check            (a pasted command line)
#   docker run IMAGE bash                   -> bash                             (anything else runs as given)
#
# stdout belongs to the validator (`--json -` writes the report there), so this script logs to stderr only.
set -euo pipefail

log() {
    printf 'tfdist-entrypoint: %s\n' "$*" >&2
}

readonly cli=tfdist-validate

if [[ $# -eq 0 ]]; then
    set -- run
fi

case "$1" in
    "${cli}")
        shift
        ;;
    run | check | diagnose | bundle | exit-codes | schema | -*)
        ;;
    *)
        if command -v -- "$1" > /dev/null 2>&1; then
            exec "$@"
        fi
        log "'$1' is neither a ${cli} command nor a program in this image; see: docker run --rm IMAGE --help"
        exit 2
        ;;
esac

log "image ${TFDIST_IMAGE_VERSION:-unknown} (revision ${TFDIST_IMAGE_REVISION:-unknown}): ${cli} $*"
exec "${cli}" "$@"
