#!/usr/bin/env bash
# Builds cohort's release artifacts for one target into dist/:
#   cohort-<target>.tar.gz                 the binary (for GitHub releases and cargo binstall)
#   cohort_mcp-<v>-py3-none-<tag>.whl      the Python wheel (uvx / pipx / pip)
#   cohort-mcp-<platform>-<v>.tgz          the npm package of the platform's binary
#   cohort-mcp-<v>.tgz                     the npm launcher (the same for every target)
#
#   packaging/release.sh [TARGET]          # default: this machine's target
#
# The binary is built with the `dist` profile (fat LTO, one codegen unit). A target other
# than this machine's needs its Rust target installed (`rustup target add TARGET`) and a
# linker for it; the release workflow (.github/workflows/release.yml) runs this script on
# a runner of each platform instead.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-$(rustc -vV | sed -n 's/^host: //p')}
cargo build --locked --profile dist --bin cohort --target "$target"
binary="target/$target/dist/cohort"
mkdir -p dist
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/cohort-$target"
cp "$binary" README.md "$stage/cohort-$target/"
tar -C "$stage" -czf "dist/cohort-$target.tar.gz" "cohort-$target"
echo "dist/cohort-$target.tar.gz"
python3 packaging/package.py --binary "$binary" --target "$target" --out dist
