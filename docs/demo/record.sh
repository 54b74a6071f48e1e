#!/usr/bin/env bash
# Makes the demo in docs/: a manager and two workers on one team, driven through
# cohort's MCP tools over HTTP (plain curl), each pane recorded to an asciicast
# file in docs/demo/, and a screenshot of the dashboard (docs/dashboard.png) taken
# in headless Chromium (the dashboard test's browser) while they work.
# Needs tmux, curl, python3 and Chromium.
#
#   cargo build && docs/demo/record.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
cohort=${COHORT:-$root/target/debug/cohort}
work=$(mktemp -d)
home=$HOME
export COHORT_TMUX_SOCKET="cohort-demo-$$" COHORT_STATE_DIR="$work/state"
export HOME="$work/home" SHELL=/bin/bash
mkdir -p "$HOME" "$work/project/tests"
printf '%s\n' 'PS1="\[\e[1;36m\]\u@demo\[\e[0m\]:\[\e[1;34m\]\W\[\e[0m\]\$ "' >"$HOME/.bashrc"

# A small project to work on.
cat >"$work/project/shop.py" <<'PY'
def total(prices, discount=0):
    """The sum of prices less a discount in percent."""
    return round(sum(prices) * (100 - discount) / 100, 2)
PY
cat >"$work/project/tests/test_shop.py" <<'PY'
import unittest
from shop import total

class Total(unittest.TestCase):
    def test_sum(self):
        self.assertEqual(total([1.5, 2.5]), 4.0)
    def test_discount(self):
        self.assertEqual(total([10, 10], discount=25), 15.0)
    def test_empty(self):
        self.assertEqual(total([]), 0)
PY

log="$work/serve.log"
"$cohort" serve --http 127.0.0.1:0 --toolsets all 2>"$log" &
server=$!
cleanup() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    tmux -L "$COHORT_TMUX_SOCKET" kill-server 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
until grep -q 'dashboard at' "$log"; do sleep 0.1; done
mcp=$(sed -n 's/^cohort: serving MCP at //p' "$log")
dashboard=$(sed -n 's/^cohort: dashboard at //p' "$log")

# One MCP session over streamable HTTP.
headers="$work/headers"
curl -s -D "$headers" -o /dev/null "$mcp" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}'
session=$(tr -d '\r' <"$headers" | sed -n 's/^mcp-session-id: //Ip')
post() {
    curl -s "$mcp" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H "Mcp-Session-Id: $session" -d "$1"
}
post '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
id=0
tool() {
    id=$((id + 1))
    local reply
    reply=$(post "{\"jsonrpc\":\"2.0\",\"id\":$id,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":$2}}")
    if grep -q '"isError":true' <<<"$reply"; then
        echo "$1 failed: $reply" >&2
        exit 1
    fi
}

tool create_layout "{\"name\":\"demo\",\"layout\":\"triple_vertical\",\"panes\":[
    {\"name\":\"manager\",\"agent\":\"manager\",\"team\":\"shop\",\"cwd\":\"$work/project\"},
    {\"name\":\"worker-1\",\"agent\":\"worker-1\",\"team\":\"shop\",\"cwd\":\"$work/project\"},
    {\"name\":\"worker-2\",\"agent\":\"worker-2\",\"team\":\"shop\",\"cwd\":\"$work/project\"}]}"
for pane in manager worker-1 worker-2; do
    rm -f "$root/docs/demo/$pane.cast"
    tool record "{\"target\":\"$pane\",\"path\":\"$root/docs/demo/$pane.cast\",\"input_marks\":true}"
done
tool run '{"target":"manager","command":"ls; echo \"plan: worker-1 runs the tests, worker-2 checks the code\""}'
tool run '{"target":"worker-1","command":"python3 -m unittest discover -v tests"}'
tool run '{"target":"worker-2","command":"python3 -m py_compile shop.py && grep -n \"def \" shop.py"}'
tool lock '{"target":"worker-1","owner":"manager"}'
tool request_access '{"target":"worker-1","requester":"worker-2","reason":"to rerun the tests"}'
tool run '{"target":"manager","command":"printf \"\\033[32m%s\\033[0m\\n\" \"tests: 3 passed (worker-1)\" \"code: compiles (worker-2)\""}'
tool run '{"target":"worker-2","command":"git --version >/dev/null && echo ready for review"}'
sleep 1
COHORT_SCREENSHOT_URL="$dashboard" COHORT_SCREENSHOT_CARDS=3 \
    COHORT_SCREENSHOT_FILE="$root/docs/dashboard.png" \
    HOME="$home" cargo test -q -p cohort --test mcp -- --ignored --exact dashboard::readme_screenshot >/dev/null
for pane in manager worker-1 worker-2; do
    tool record "{\"target\":\"$pane\",\"stop\":true}"
done
# A worker (the fake Claude Code of the tests) asking for a permission, with what it
# spent: the workers' dashboard test takes that picture.
COHORT_WORKER_SCREENSHOT="$root/docs/dashboard-workers.png" HOME="$home" \
    cargo test -q -p cohort --test workers -- --exact \
    workers_dashboard::a_worker_shows_what_it_spent_and_its_approval_is_answered_from_the_page >/dev/null
echo "recorded: docs/demo/{manager,worker-1,worker-2}.cast; screenshots: docs/dashboard.png, docs/dashboard-workers.png"
