# Sourced by the scripts in scripts/: strict mode, repository root, PATH, timed steps.
# A failing command inside `step` exits the script (set -e); the EXIT trap names the step.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"

SCRIPT_NAME="$(basename "$0")"
SCRIPT_STARTED=$EPOCHREALTIME
STEP_NAME=""
STEP_STARTED=""

# Seconds since the EPOCHREALTIME value $1, with one decimal.
elapsed() {
    awk -v start="$1" -v now="$EPOCHREALTIME" 'BEGIN { printf "%.1f", now - start }'
}

# step NAME COMMAND [ARGS...]: runs one step, printing its duration. For a developer's partial
# run, ONLY_STEPS=REGEX (grep -E) runs only the steps whose name matches it and says which were
# skipped; CI never sets it. A step that runs is run whole: the scripts it calls see no filter.
step() {
    if [[ -n ${ONLY_STEPS:-} ]] && ! grep -qE -- "$ONLY_STEPS" <<<"$1"; then
        echo "--- [$SCRIPT_NAME] skipped (ONLY_STEPS): $1"
        return 0
    fi
    STEP_NAME=$1
    shift
    STEP_STARTED=$EPOCHREALTIME
    echo "==> [$SCRIPT_NAME] $STEP_NAME"
    ONLY_STEPS="" "$@"
    echo "<== [$SCRIPT_NAME] $STEP_NAME: ok in $(elapsed "$STEP_STARTED")s"
    STEP_NAME=""
}

on_exit() {
    local rc=$?
    if ((rc != 0)); then
        if [[ -n $STEP_NAME ]]; then
            echo "!!! [$SCRIPT_NAME] FAILED: $STEP_NAME (exit $rc after $(elapsed "$STEP_STARTED")s)" >&2
        else
            echo "!!! [$SCRIPT_NAME] FAILED (exit $rc)" >&2
        fi
    else
        echo "=== [$SCRIPT_NAME] done in $(elapsed "$SCRIPT_STARTED")s"
    fi
}
trap on_exit EXIT

die() {
    echo "$SCRIPT_NAME: $*" >&2
    exit 1
}
