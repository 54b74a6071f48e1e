#!/usr/bin/env python3
"""Packages a built `cohort` binary the way the ecosystem installs tools.

    packaging/package.py --binary target/release/cohort --out dist [--target TRIPLE]

writes, for the binary's platform:

- a Python wheel, `cohort_mcp-<version>-py3-none-<platform>.whl`, carrying the binary
  as a script (as ruff and uv ship theirs), so that `uvx cohort-mcp`, `pipx run
  cohort-mcp` and `pip install cohort-mcp` put `cohort` and `cohort-mcp` on PATH;
- an npm package for the platform, `cohort-mcp-<platform>-<version>.tgz`, holding the
  binary, and the launcher package every platform shares, `cohort-mcp-<version>.tgz`,
  whose `cohort` and `cohort-mcp` commands run the binary of the platform package npm
  installed (the pattern of esbuild and biome), so that `npx -y cohort-mcp` works.

`cohort-mcp` is `cohort mcp`: the MCP server on stdio, with the arguments given.

Only the standard library is used, and nothing is fetched: the script runs on a fresh
machine with Python 3.8 or later, and `npm pack` when npm is there (else the npm
packages are skipped, and the script says so).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = "cohort-mcp"
SUMMARY = (
    "A terminal engine for AI agents, served over MCP: persistent shells, exact "
    "completion, small reads, teams of agents in panes a human can watch."
)

# Rust target triple -> (wheel platform tag or None to compute, npm os, npm cpu, npm libc).
TARGETS = {
    "x86_64-unknown-linux-gnu": (None, "linux", "x64", "glibc"),
    "aarch64-unknown-linux-gnu": (None, "linux", "arm64", "glibc"),
    "x86_64-unknown-linux-musl": ("musllinux_1_2_x86_64", "linux", "x64", "musl"),
    "aarch64-unknown-linux-musl": ("musllinux_1_2_aarch64", "linux", "arm64", "musl"),
    "x86_64-apple-darwin": ("macosx_10_12_x86_64", "darwin", "x64", None),
    "aarch64-apple-darwin": ("macosx_11_0_arm64", "darwin", "arm64", None),
}

# The cohort-mcp command in a wheel: `cohort mcp` from the same directory.
CMD_SCRIPT = """#!/bin/sh
# cohort's MCP server on stdio: `cohort mcp` with the arguments given.
here=$(dirname -- "$0")
if [ -x "$here/cohort" ]; then exec "$here/cohort" mcp "$@"; fi
exec cohort mcp "$@"
"""


def version() -> str:
    text = (ROOT / "Cargo.toml").read_text()
    package = text.split("[package]", 1)[1]
    return re.search(r'^version\s*=\s*"([^"]+)"', package, re.M).group(1)


def host_target() -> str:
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True)
    return re.search(r"^host: (\S+)", out.stdout, re.M).group(1)


def glibc_needed(binary: Path) -> tuple[int, int]:
    """The newest GLIBC_x.y symbol version the binary asks for."""
    found = re.findall(rb"GLIBC_2\.(\d+)(?:\.\d+)?\x00", binary.read_bytes())
    newest = max((int(m) for m in found), default=17)
    return (2, max(newest, 17))


def wheel_tag(target: str, binary: Path) -> str:
    tag = TARGETS[target][0]
    if tag is not None:
        return tag
    arch = target.split("-", 1)[0]
    major, minor = glibc_needed(binary)
    return f"manylinux_{major}_{minor}_{arch}"


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def zip_entry(zf: zipfile.ZipFile, name: str, data: bytes, executable: bool) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    mode = 0o755 if executable else 0o644
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def build_wheel(binary: Path, target: str, ver: str, out: Path) -> Path:
    dist = NAME.replace("-", "_")
    tag = wheel_tag(target, binary)
    path = out / f"{dist}-{ver}-py3-none-{tag}.whl"
    readme = (ROOT / "README.md").read_text()
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {ver}\n"
        f"Summary: {SUMMARY}\n"
        "License: MIT OR Apache-2.0\n"
        "Project-URL: Source, https://github.com/cohort-term/cohort\n"
        "Requires-Python: >=3.8\n"
        "Description-Content-Type: text/markdown\n\n" + readme
    )
    wheel = (
        "Wheel-Version: 1.0\n"
        "Generator: cohort packaging/package.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: py3-none-{tag}\n"
    )
    files = [
        (f"{dist}-{ver}.data/scripts/cohort", binary.read_bytes(), True),
        (f"{dist}-{ver}.data/scripts/cohort-mcp", CMD_SCRIPT.encode(), True),
        (f"{dist}-{ver}.dist-info/METADATA", metadata.encode(), False),
        (f"{dist}-{ver}.dist-info/WHEEL", wheel.encode(), False),
    ]
    record = f"{dist}-{ver}.dist-info/RECORD"
    lines = [f"{name},{record_hash(data)},{len(data)}" for name, data, _ in files]
    lines.append(f"{record},,")
    with zipfile.ZipFile(path, "w") as zf:
        for name, data, executable in files:
            zip_entry(zf, name, data, executable)
        zip_entry(zf, record, ("\n".join(lines) + "\n").encode(), False)
    return path


def npm_platform(target: str) -> str:
    _, os_name, cpu, libc = TARGETS[target]
    suffix = {"glibc": "-gnu", "musl": "-musl", None: ""}[libc]
    return f"{os_name}-{cpu}{suffix}"


LAUNCHER = r"""#!/usr/bin/env node
// Runs the cohort binary of the platform package npm installed beside this one.
"use strict";
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const PACKAGES = __PACKAGES__;

function libc() {
  if (process.platform !== "linux") return "";
  const report = process.report && process.report.getReport();
  const glibc = report && report.header && report.header.glibcVersionRuntime;
  return glibc ? "-gnu" : "-musl";
}

function binary() {
  if (process.env.COHORT_BINARY) return process.env.COHORT_BINARY;
  const key = `${process.platform}-${process.arch}${libc()}`;
  const pkg = PACKAGES[key];
  if (!pkg) {
    console.error(`cohort: no prebuilt binary for ${key}. Install with \`cargo install cohort\`, or set COHORT_BINARY to a cohort binary.`);
    process.exit(1);
  }
  try {
    const bin = require.resolve(`${pkg}/bin/cohort`);
    fs.accessSync(bin, fs.constants.X_OK);
    return bin;
  } catch (e) {
    console.error(`cohort: the package ${pkg} is not installed (npm skips optional dependencies when asked to, or when they fail). Install it with \`npm install ${pkg}\`.`);
    process.exit(1);
  }
}

const args = __ARGS__.concat(process.argv.slice(2));
const child = spawn(binary(), args, { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (e) => {
  console.error(`cohort: could not start ${e.path || "the binary"}: ${e.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code === null ? 1 : code);
  }
});
"""


def npm_pack(directory: Path, out: Path) -> Path:
    result = subprocess.run(
        ["npm", "pack", "--silent", "--pack-destination", str(out.resolve())],
        cwd=directory,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        sys.exit(f"npm pack failed in {directory}:\n{result.stderr}")
    return out / result.stdout.strip().splitlines()[-1]


def build_npm(binary: Path, target: str, ver: str, out: Path) -> list[Path]:
    if shutil.which("npm") is None:
        print("npm is not installed: the npm packages are not built", file=sys.stderr)
        return []
    packages = {}
    for triple in TARGETS:
        packages[npm_platform(triple)] = f"{NAME}-{npm_platform(triple)}"
    own = f"{NAME}-{npm_platform(target)}"
    _, os_name, cpu, libc = TARGETS[target]
    made = []
    with tempfile.TemporaryDirectory() as tmp:
        platform_dir = Path(tmp) / "platform"
        (platform_dir / "bin").mkdir(parents=True)
        shutil.copy(binary, platform_dir / "bin" / "cohort")
        os.chmod(platform_dir / "bin" / "cohort", 0o755)
        manifest = {
            "name": own,
            "version": ver,
            "description": f"The cohort binary for {npm_platform(target)}; installed by {NAME}.",
            "license": "MIT OR Apache-2.0",
            "repository": "https://github.com/cohort-term/cohort",
            "os": [os_name],
            "cpu": [cpu],
            "files": ["bin/cohort"],
            "preferUnplugged": True,
        }
        if libc:
            manifest["libc"] = [libc]
        (platform_dir / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        made.append(npm_pack(platform_dir, out))

        launcher_dir = Path(tmp) / "launcher"
        (launcher_dir / "bin").mkdir(parents=True)
        table = json.dumps(packages, indent=2)
        for command, args in [("cohort", "[]"), ("cohort-mcp", '["mcp"]')]:
            script = LAUNCHER.replace("__PACKAGES__", table).replace("__ARGS__", args)
            (launcher_dir / "bin" / f"{command}.js").write_text(script)
            os.chmod(launcher_dir / "bin" / f"{command}.js", 0o755)
        shutil.copy(ROOT / "README.md", launcher_dir / "README.md")
        manifest = {
            "name": NAME,
            "version": ver,
            "description": SUMMARY,
            "license": "MIT OR Apache-2.0",
            "repository": "https://github.com/cohort-term/cohort",
            "bin": {"cohort": "bin/cohort.js", "cohort-mcp": "bin/cohort-mcp.js"},
            "files": ["bin/", "README.md"],
            "engines": {"node": ">=16"},
            "optionalDependencies": {pkg: ver for pkg in packages.values()},
        }
        (launcher_dir / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        made.append(npm_pack(launcher_dir, out))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, type=Path, help="the built cohort binary")
    parser.add_argument("--out", required=True, type=Path, help="where the packages go")
    parser.add_argument(
        "--target",
        help="the binary's Rust target triple (default: this machine's)",
    )
    parser.add_argument("--no-npm", action="store_true", help="build the wheel only")
    args = parser.parse_args()
    target = args.target or host_target()
    if target not in TARGETS:
        sys.exit(f"no package for target {target}: one of {', '.join(TARGETS)}")
    if not args.binary.is_file():
        sys.exit(f"{args.binary} is not a file: build cohort first (cargo build --release)")
    args.out.mkdir(parents=True, exist_ok=True)
    ver = version()
    made = [build_wheel(args.binary, target, ver, args.out)]
    if not args.no_npm:
        made += build_npm(args.binary, target, ver, args.out)
    for path in made:
        print(path)


if __name__ == "__main__":
    main()
