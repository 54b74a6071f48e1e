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


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cohort_pid(binary):
    out = subprocess.run(["pgrep", "-n", "-f", f"{binary} mcp"], capture_output=True, text=True).stdout.strip()
    return int(out) if out else None


async def call(session, name, args):
    result = await session.call_tool(name, args)
    if field(result, "is_error", "isError"):
        raise RuntimeError(f"{name} {args}: {result.content}")
    return field(result, "structured_content", "structuredContent")


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
            for n in names + ["b0"]:
                await call(session, "close", {"target": n})

    print(f"{'scenario':<52} {'median':>10}  samples")
    for name, value in figures.items():
        if isinstance(value, list):
            print(f"{name:<52} {statistics.median(value):>10.1f}  {' '.join(f'{v:.1f}' for v in value)}")
        else:
            print(f"{name:<52} {value}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
