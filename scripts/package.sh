#!/usr/bin/env bash
# `make package`: KG Memory's installable packages, made by Tauri's bundler
# (@tauri-apps/cli, pinned in src-tauri/package.json).
#   scripts/package.sh            release build: the .deb, the .rpm and the AppImage,
#                                 copied to target/package/
#   scripts/package.sh --debug    a debug build of the .deb and the .rpm, into
#                                 target/package-debug/ (the smoke test of `make test`:
#                                 same bundler and layout, without a release build)
# On macOS and Windows the same bundler makes the .dmg and the .msi (README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }

profile=release
tauri_flags=()
bundles=(deb rpm appimage)
out=target/package
if [ "${1:-}" = --debug ]; then
  profile=debug
  tauri_flags=(--debug)
  bundles=(deb rpm)
  out=target/package-debug
fi

step "system libraries and the graph view (scripts/setup.sh run)"
./scripts/setup.sh run
# The bundler also needs the tray library's development files (it reads which
# appindicator the app links from pkg-config), and `file` for the AppImage.
missing=()
dpkg-query -W -f='${Status}' libayatana-appindicator3-dev 2>/dev/null | grep -q "install ok installed" ||
  missing+=(libayatana-appindicator3-dev)
command -v file >/dev/null 2>&1 || missing+=(file)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
  else
    echo "Packaging needs: ${missing[*]}. Run this, then retry:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

# Tauri runs cargo from src-tauri/: a relative CARGO_TARGET_DIR must not move.
target_dir=$(realpath -m "${CARGO_TARGET_DIR:-target}")
export CARGO_TARGET_DIR="$target_dir"
step "the headless server and CLI (kg-memory), $profile"
if [ "$profile" = release ]; then
  # With the app, as `make build` does: the shared dependencies then get the same
  # features as in the app's build, so both builds reuse one set of artifacts.
  cargo build --release -p kg-cli -p kg-memory-app
else
  # Exactly test.sh's build: with the same packages and targets, Cargo unifies the
  # dependencies' features the same way and finds everything built. `-p kg-cli`
  # alone resolved other features for serde, tokio, hyper, axum and rmcp, and so
  # compiled them, kg-core and kg-server a second time (5.5 min of a cold run here).
  cargo build --workspace --bins --tests
fi
# The bundler ships kg-memory beside the app (/usr/bin in the .deb) as an "external
# binary", which it looks for under the name <name>-<target triple>
# (src-tauri/tauri.package.conf.json).
triple=$(rustc -vV | sed -n 's/^host: //p')
mkdir -p target/package-sidecar
cp "$target_dir/$profile/kg-memory" "target/package-sidecar/kg-memory-$triple"

step "Tauri's bundler"
(cd src-tauri && npm ci --no-audit --no-fund --loglevel=error)
bundle_dir="$target_dir/$profile/bundle"
rm -rf "$out" && mkdir -p "$out"
failed=()
for bundle in "${bundles[@]}"; do
  step "bundle: $bundle"
  log="$out/$bundle.log"
  rm -rf "${bundle_dir:?}/$bundle" # only this build's package is copied below
  # tauri build compiles the tray app (kg-memory-app) with its custom-protocol
  # feature, then bundles it with kg-memory.
  if (cd src-tauri && npx tauri build "${tauri_flags[@]}" --ci \
    --config tauri.package.conf.json --bundles "$bundle") 2>&1 | tee "$log"; then
    # "KG Memory_0.1.0_amd64.deb" (the product name) becomes kg-memory_0.1.0_amd64.deb.
    for made in "$bundle_dir"/deb/*.deb "$bundle_dir"/rpm/*.rpm "$bundle_dir"/appimage/*.AppImage; do
      [ -f "$made" ] || continue
      name=$(basename "$made" | tr ' A-Z' '-a-z' | sed 's/\.appimage$/.AppImage/')
      case $bundle:$name in deb:*.deb | rpm:*.rpm | appimage:*.AppImage) cp "$made" "$out/$name" ;; esac
    done
  else
    failed+=("$bundle")
  fi
done

step "packages in $out"
ls -l "$out"/*.deb "$out"/*.rpm "$out"/*.AppImage 2>/dev/null || true
if [ ${#failed[@]} -gt 0 ]; then
  for bundle in "${failed[@]}"; do
    echo "package.sh: the $bundle bundle failed; the bundler said (full log: $out/$bundle.log):" >&2
    grep -iE -A1 'error|failed|panicked' "$out/$bundle.log" | tail -8 >&2 || true
  done
  exit 1
fi
