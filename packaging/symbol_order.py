#!/usr/bin/env python3
"""Finds the functions a `cohort mcp` server runs in a usual session, for the linker to
lay them out together.

    packaging/symbol_order.py --binary target/release/cohort --out packaging/symbol-order/x86_64-unknown-linux-gnu.txt

Most of the server's resident memory is its program text: the kernel maps a piece of
64 KiB around each page of code first run, and the functions a session runs are spread
over the whole binary, so nearly all of it ends up mapped. Linked with these functions
first (lld's `--symbol-ordering-file`, which build.rs passes for release builds), they
sit in about 3 MiB and the rest of the program is never mapped.

The script runs the binary under valgrind's callgrind through a session over stdio, as
an MCP host drives it (initialize, the tool list, sessions opened, commands run, a big
output, Ctrl-C, a REPL, reads, close), on a private tmux server with an empty home;
then `cohort reduce` over every recorded tool output in fixtures/reducers, with the
command that produced it, so that each reducer a real command picks is laid out with
the rest. It writes every function callgrind saw run, by its symbol name, one per line,
sorted. Symbol names hold hashes of the toolchain, the profile and the
dependencies, so the list fits builds made like the one it was made from: the committed
list is made again from a release build when the toolchain or the dependencies change
(a list that matches nothing changes nothing), and `packaging/release.sh` makes one
from each build it publishes.

Exits 2, writing nothing, when valgrind or tmux is missing; 1 when the session fails
or takes more than ten minutes.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

try:
    import tomllib
except ImportError:  # Python before 3.11 (the release runners' Ubuntu 22.04 has 3.10)
    tomllib = None

SCENARIO = [
    ("open", {"name": "one"}),
    ("open", {"name": "two"}),
    ("open", {"name": "repl"}),
    ("run", {"target": "one", "command": "echo hello"}),
    ("run", {"target": "one", "command": "seq 1 100000", "timeout_ms": 120000}),
    ("run", {"target": "one", "command": "ls /nonexistent; false"}),
    ("run", {"target": "two", "command": "sleep 30", "timeout_ms": 1500}),
    ("key", {"target": "two", "keys": ["C-c"]}),
    ("read", {"target": "one", "mode": "tail", "tail": 5}),
    ("read", {"target": "one", "mode": "lines", "lines": "2-4"}),
    ("read", {"target": "two", "mode": "screen"}),
    ("run", {"target": "repl", "command": "python3 -q", "until": ">>> ", "timeout_ms": 20000}),
    ("send", {"target": "repl", "text": "print(6*7)"}),
    ("read", {"target": "repl"}),
    ("list", {}),
    ("status", {"target": "one"}),
    ("close", {"target": "repl"}),
]


class Server:
    """`cohort mcp` under callgrind, spoken to in JSON-RPC lines."""

    def __init__(self, command: list[str], env: dict[str, str]):
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.next_id = 1

    def request(self, method: str, params: dict) -> dict:
        ident = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise SystemExit(f"the server ended during {method}")
            if not line.startswith(b"{"):
                continue
            message = json.loads(line)
            if message.get("id") == ident:
                return message

    def send(self, message: dict) -> None:
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=120)


def executed_functions(profile: str) -> list[str]:
    """Every function named in a callgrind profile, in the order first named."""
    names: dict[str, str] = {}
    order: list[str] = []
    seen = set()
    pattern = re.compile(r"^c?fn=\((\d+)\)(?: (.*))?$")
    # A recursive call's copy is named `NAME'2`.
    recursion = re.compile(r"'\d+$")
    with open(profile, errors="replace") as f:
        for line in f:
            match = pattern.match(line.rstrip("\n"))
            if not match:
                continue
            ident, name = match.groups()
            if name:
                names[ident] = name
            name = names.get(ident)
            if name:
                name = recursion.sub("", name)
            # Not symbols: `0x…`, and callgrind's own names like `(below main)`.
            if name and not name.startswith(("0x", "(")) and " " not in name and name not in seen:
                seen.add(name)
                order.append(name)
    return order


def reducer_runs(binary: str, fixtures: str, scratch: str, env: dict[str, str]) -> list[str]:
    """`cohort reduce` over each recorded output in `fixtures`, with the command that
    produced it, each under callgrind; the profiles' paths, in the fixtures' order."""
    jobs = []
    for name in sorted(os.listdir(fixtures)):
        if not name.endswith(".out"):
            continue
        command = fixture_command(os.path.join(fixtures, name[: -len(".out")] + ".toml"))
        profile = os.path.join(scratch, f"reduce-{name}.callgrind")
        jobs.append((os.path.join(fixtures, name), command, profile))

    def run(job: tuple[str, str, str]) -> str:
        output, command, profile = job
        with open(output, "rb") as stdin:
            # A reduction takes about a second under callgrind.
            subprocess.run(
                ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={profile}",
                 binary, "reduce", "--command", command],
                stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True,
                timeout=120,
            )
        return profile

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1)
    try:
        return list(pool.map(run, jobs))
    finally:
        # On a failure or the alarm, the reductions not started are not waited for.
        pool.shutdown(wait=True, cancel_futures=True)


def fixture_command(path: str) -> str:
    """The `command` of a fixture's TOML description."""
    if tomllib is not None:
        with open(path, "rb") as f:
            return tomllib.load(f)["command"]
    # The fixtures write it as one basic string, whose escapes are JSON's.
    with open(path, encoding="utf-8") as f:
        for line in f:
            match = re.match(r'^command\s*=\s*(".*")\s*$', line)
            if match:
                return json.loads(match.group(1))
    raise SystemExit(f"symbol order: {path} names no command")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--fixtures",
        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "reducers"),
        help="recorded tool outputs to reduce (default: the repository's fixtures/reducers)",
    )
    args = parser.parse_args()
    for tool in ("valgrind", "tmux"):
        if shutil.which(tool) is None:
            print(f"symbol order: {tool} is not installed; the binary keeps the linker's order", file=sys.stderr)
            return 2
    binary = os.path.abspath(args.binary)

    def too_long(_signum, _frame):
        raise SystemExit("symbol order: the session and the reductions took more than ten minutes")

    # A server that stops answering must not hold a release build for hours.
    signal.signal(signal.SIGALRM, too_long)
    signal.alarm(600)
    with tempfile.TemporaryDirectory() as scratch:
        home = os.path.join(scratch, "home")
        os.makedirs(home)
        socket = os.path.join(scratch, "tmux.sock")
        env = dict(os.environ, HOME=home, COHORT_STATE_DIR=os.path.join(scratch, "state"), COHORT_TMUX_SOCKET=socket)
        env.pop("TMUX", None)
        profile = os.path.join(scratch, "callgrind.out")
        server = Server(
            ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={profile}", binary, "mcp"],
            env,
        )
        try:
            server.request(
                "initialize",
                {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "symbol-order", "version": "0"}},
            )
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            server.request("tools/list", {})
            for name, arguments in SCENARIO:
                answer = server.request("tools/call", {"name": name, "arguments": arguments})
                if "error" in answer or answer.get("result", {}).get("isError"):
                    print(f"symbol order: {name} {arguments} failed: {answer}", file=sys.stderr)
            server.close()
        finally:
            if server.process.poll() is None:
                server.process.kill()
            subprocess.run(["tmux", "-S", socket, "kill-server"], stderr=subprocess.DEVNULL)
        functions = set(executed_functions(profile))
        for reduced in reducer_runs(binary, args.fixtures, scratch, env):
            functions.update(executed_functions(reduced))
    # The toolchain that built the binary, as its `.comment` section names it.
    with open(binary, "rb") as f:
        named = re.search(rb"rustc version [^\x00]+", f.read())
    rustc = named.group().decode(errors="replace") if named else "an unknown rustc"
    with open(args.out, "w") as f:
        f.write(
            "# The functions a `cohort mcp` session runs, for lld's --symbol-ordering-file\n"
            f"# (see build.rs). Made by packaging/symbol_order.py from a build by {rustc}.\n"
        )
        # All of them end up together at the start of the text, so their order among
        # themselves matters little: sorted, a list made again differs only by what
        # changed.
        f.write("\n".join(sorted(functions)) + "\n")
    print(f"symbol order: {len(functions)} functions run in a session", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
