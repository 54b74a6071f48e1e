#!/usr/bin/env bash
# Builds cohort's release artifacts for one target into dist/:
#   cohort-<target>.tar.gz                 the binary (for GitHub releases and cargo binstall)
#   cohort_mcp-<v>-py3-none-<tag>.whl      the Python wheel (uvx / pipx / pip)
#   cohort-mcp-<platform>-<v>.tgz          the npm package of the platform's binary
#   cohort-mcp-<v>.tgz                     the npm launcher (the same for every target)
#
#   packaging/release.sh [TARGET]          # default: this machine's target
#
# The binary is built with the `release` profile (fat LTO, one codegen unit); on x86_64
# Linux it is linked again with its hot functions together, listed from this very build
# (needs valgrind and tmux; see packaging/symbol_order.py and build.rs). A target other
# than this machine's needs its Rust target installed (`rustup target add TARGET`) and a
# linker for it; the release workflow (.github/workflows/release.yml) runs this script on
# a runner of each platform instead.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-$(rustc -vV | sed -n 's/^host: //p')}
cargo build --locked --release --bin cohort --target "$target"
binary="target/$target/release/cohort"
mkdir -p dist
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# Linked again with the functions a session runs laid out together, so that a server
# maps a few MiB of its program instead of nearly all of it (packaging/symbol_order.py
# finds them by running this very build). Where the build runs here and was linked by
# lld (x86_64 Linux); elsewhere the binary keeps the linker's order.
host=$(rustc -vV | sed -n 's/^host: //p')
if [ "$target" = "$host" ] && readelf -p .comment "$binary" 2>/dev/null | grep -q 'Linker: LLD'; then
    # Exit 2: valgrind or tmux is missing (said, and skipped); any other failure stops
    # the release, which would otherwise ship without the order unnoticed.
    status=0
    python3 packaging/symbol_order.py --binary "$binary" --out "$stage/symbol-order.txt" || status=$?
    if [ "$status" -eq 0 ]; then
        COHORT_SYMBOL_ORDER="$stage/symbol-order.txt" \
            cargo build --locked --release --bin cohort --target "$target"
        rm "$stage/symbol-order.txt"
    elif [ "$status" -ne 2 ]; then
        exit "$status"
    fi
else
    echo "symbol order: skipped for $target (built for another platform, or not linked by lld)" >&2
fi
mkdir "$stage/cohort-$target"
cp "$binary" README.md "$stage/cohort-$target/"
tar -C "$stage" -czf "dist/cohort-$target.tar.gz" "cohort-$target"
echo "dist/cohort-$target.tar.gz"
python3 packaging/package.py --binary "$binary" --target "$target" --out dist
