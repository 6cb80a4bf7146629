# Sourced by the scripts that run staged binaries on the GPU machine (gpu-first-hour.sh,
# first-call.sh): `stage_args DEFAULT_PARTS -- "$@"` reads `STAGE OUT [PART...]`, prints the
# calling script's header and exits 2 when they are missing, and sets `stage` and `out` (absolute,
# OUT made) and the array `parts` (the given parts, else DEFAULT_PARTS, split on spaces).
stage_args() {
    local defaults=$1
    shift 2
    if [ "$#" -lt 2 ]; then
        sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
        exit 2
    fi
    stage=$(cd "$1" && pwd)
    mkdir -p "$2"
    out=$(cd "$2" && pwd)
    shift 2
    parts=("$@")
    # shellcheck disable=SC2206 # the defaults are split on purpose
    [ "${#parts[@]}" -gt 0 ] || parts=($defaults)
}
