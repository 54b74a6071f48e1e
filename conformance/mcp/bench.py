#!/usr/bin/env python3
"""Measures cohort from the outside, as an MCP host meets it: the official MCP Python
SDK starts `cohort mcp` over stdio and drives it through its tools. Prints medians of
5 repetitions per scenario (see shared benchmark definitions); asserts nothing.

Usage: bench.py PATH/TO/cohort   (use a release build; the environment may set
COHORT_TMUX_SOCKET and COHORT_STATE_DIR to keep the run apart from real sessions)
"""
import asyncio
import os
import statistics
import subprocess
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPS = 5


def field(obj, snake, camel):
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def rss_kib(pid, key="VmRSS"):
    """One of a process's resident sizes in KiB: VmRSS (all), RssAnon (its heap and
    stacks), RssFile (its program and libraries, mapped from their files)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(f"{key}:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def tmux_server_pid():
    socket = os.environ.get("COHORT_TMUX_SOCKET", "cohort")
    flag = "-S" if "/" in socket else "-L"
    try:
        out = subprocess.run(["tmux", flag, socket, "display-message", "-p", "#{pid}"],
                             capture_output=True, text=True, timeout=5).stdout.strip()
        return int(out)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def cohort_pid(binary):
    out = subprocess.run(["pgrep", "-n", "-f", f"{binary} mcp"], capture_output=True, text=True).stdout.strip()
    return int(out) if out else None


async def call(session, name, args):
    result = await session.call_tool(name, args)
    if field(result, "is_error", "isError"):
        raise RuntimeError(f"{name} {args}: {result.content}")
    return field(result, "structured_content", "structuredContent")


def benchmark_workspace():
    """A directory for the six token-reduction commands: a git repository with 30
    commits and 40 changed files, 137 grep hits in 20 files, a failing test module, and
    200 files to list."""
    import tempfile
    root = tempfile.mkdtemp(prefix="cohort-bench-")
    git = lambda *a: subprocess.run(["git", "-C", root, *a], check=True, capture_output=True)
    git("init", "-q")
    git("config", "user.email", "bench@example.com")
    git("config", "user.name", "Bench")
    os.makedirs(f"{root}/src")
    for i in range(30):
        with open(f"{root}/src/mod{i % 40:02}.py", "a") as f:
            f.write(f"value_{i} = {i}\n")
        git("add", "-A")
        git("commit", "-q", "-m", f"feat(core): step {i} of the plan")
    for i in range(40):
        with open(f"{root}/src/mod{i:02}.py", "a") as f:
            f.write("# changed\n")
    hits = 0
    for i in range(20):
        with open(f"{root}/src/hits{i:02}.txt", "w") as f:
            for j in range(7 if i < 17 else 6):
                f.write(f"line {j}: needle here\n")
                hits += 1
    os.makedirs(f"{root}/many")
    for i in range(200):
        open(f"{root}/many/file_{i:03}.dat", "w").close()
    with open(f"{root}/test_bench.py", "w") as f:
        f.write("def test_ok():\n    assert True\n\ndef test_fails():\n    assert 1 + 1 == 3\n")
    return root


async def replies(session):
    """Characters a host's model reads per call on the six benchmark commands: the text
    content cohort returns, against the JSON serialisation of the same result."""
    import json
    root = benchmark_workspace()
    await call(session, "open", {"name": "replies", "cwd": root})
    has_pytest = subprocess.run([sys.executable, "-m", "pytest", "--version"], capture_output=True).returncode == 0
    commands = [
        "git log -n 30",
        "git status",
        "grep -rn needle src",
        f"{sys.executable} -m pytest -q test_bench.py" if has_pytest else "python3 -m unittest -q 2>&1 | tail -n 40",
        "cargo --version",
        "ls -la many",
    ]
    rows = []
    for command in commands:
        result = await session.call_tool("run", {"target": "replies", "command": command, "timeout_ms": 60000})
        text = "".join(c.text for c in result.content if getattr(c, "text", None))
        structured = field(result, "structured_content", "structuredContent")
        as_json = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
        rows.append((command.split(" 2>&1")[0][:40], len(text), len(as_json)))
    await call(session, "close", {"target": "replies"})
    return rows


async def main(binary):
    env = dict(os.environ)
    figures = {}
    params = StdioServerParameters(command=binary, args=["mcp"], env=env)
    start = time.perf_counter()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            figures["start: spawn -> initialize answered (ms)"] = [(time.perf_counter() - start) * 1000]
            await call(session, "open", {"name": "b0"})

            samples = []
            for i in range(REPS):
                t = time.perf_counter()
                out = await call(session, "run", {"target": "b0", "command": f"echo marker-{i}"})
                samples.append((time.perf_counter() - t) * 1000)
                assert out["output"].strip() == f"marker-{i}", out
            figures["echo round trip (ms)"] = samples

            samples = []
            for _ in range(REPS):
                out = await call(session, "run", {"target": "b0", "command": "sleep 1; date +%s.%N; echo done"})
                seen = time.time()
                ended = float([l for l in out["output"].splitlines() if l.strip().replace(".", "").isdigit()][-1])
                samples.append((seen - ended) * 1000)
                assert out["verdict"]["complete"] and out["verdict"]["exit_status"] == 0
            figures["completion: command end -> verdict (ms)"] = samples

            samples = []
            for _ in range(REPS):
                t = time.perf_counter()
                out = await call(session, "run", {"target": "b0", "command": "seq 1 200000", "timeout_ms": 60000})
                samples.append((time.perf_counter() - t) * 1000)
                assert out["verdict"]["complete"], out["verdict"]
                assert out["output"].rstrip().endswith("200000"), out["output"][-200:]
            figures["big output: seq 1 200000 complete (ms)"] = samples
            tail = await call(session, "read", {"target": "b0", "mode": "tail", "tail": 3, "raw": True})
            meta = out["meta"]
            figures["big output: meta line"] = meta

            samples = []
            for i in range(REPS):
                t = time.perf_counter()
                await call(session, "run", {"target": "b0", "command": "python3 -q", "until": ">>> "})
                out = await call(session, "run", {"target": "b0", "command": "print(6*7)", "until": ">>> "})
                samples.append((time.perf_counter() - t) * 1000)
                assert "42" in out["output"], out
                await call(session, "run", {"target": "b0", "command": "exit()"})
            figures["nested REPL: python3, prompt, print(6*7) (ms)"] = samples

            text = "héllo 世界 🎉"
            out = await call(session, "run", {"target": "b0", "command": f"echo '{text}'"})
            figures["unicode round trip exact"] = out["output"].strip() == text

            samples = []
            for _ in range(REPS):
                await call(session, "run", {"target": "b0", "command": "sleep 30", "timeout_ms": 200})
                t = time.perf_counter()
                await call(session, "key", {"target": "b0", "keys": ["C-c"]})
                while True:
                    st = await call(session, "status", {"target": "b0"})
                    if st["session"]["at_shell"]:
                        break
                samples.append((time.perf_counter() - t) * 1000)
            figures["Ctrl-C: key -> shell back (ms)"] = samples

            reply_rows = await replies(session)

            names = [f"f{i}" for i in range(8)]
            for n in names:
                await call(session, "open", {"name": n})
            samples = []
            for _ in range(REPS):
                t = time.perf_counter()
                await asyncio.gather(*[call(session, "run", {"target": n, "command": "sleep 0.5"}) for n in names])
                await asyncio.gather(*[call(session, "read", {"target": n}) for n in names])
                samples.append((time.perf_counter() - t) * 1000)
            figures["fan-out: 8 sessions, 0.5 s command, read all (ms)"] = samples
            pid = cohort_pid(binary)
            figures["memory: RSS with 9 sessions (MiB)"] = [rss_kib(pid) / 1024] if pid and rss_kib(pid) else "unknown"
            for key, what in (("RssAnon", "heap and stacks"), ("RssFile", "program and libraries")):
                kib = rss_kib(pid, key) if pid else None
                figures[f"memory:   of which {what} (MiB)"] = [kib / 1024] if kib else "unknown"
            tmux_pid = tmux_server_pid()
            figures["memory: its tmux server's RSS, 9 sessions, one printed seq 1 200000 (MiB)"] = (
                [rss_kib(tmux_pid) / 1024] if tmux_pid and rss_kib(tmux_pid) else "unknown"
            )
            for n in names + ["b0"]:
                await call(session, "close", {"target": n})

    print(f"{'what the model reads per call':<42} {'text':>7} {'as JSON':>8}")
    for command, text, as_json in reply_rows:
        print(f"{command:<42} {text:>7} {as_json:>8}")
    total_text, total_json = sum(r[1] for r in reply_rows), sum(r[2] for r in reply_rows)
    print(f"{'total':<42} {total_text:>7} {total_json:>8}  ({total_text / total_json:.2f}x)")
    print()
    print(f"{'scenario':<52} {'median':>10}  samples")
    for name, value in figures.items():
        if isinstance(value, list):
            print(f"{name:<52} {statistics.median(value):>10.1f}  {' '.join(f'{v:.1f}' for v in value)}")
        else:
            print(f"{name:<52} {value}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
