#!/usr/bin/env bash
# Installs every system package pxl needs from Debian 12's archive. Idempotent:
# does nothing when all packages are already present.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  llvm-19-dev libzstd-dev            # LLVM 19 (ORC JIT, NVPTX); zstd is needed by LLVM's CMake config
  libreadline-dev                    # REPL line editing and history
  catch2                             # unit tests (v2, catch2/catch.hpp)
  libopenblas-dev                    # matmul / einsum
  libgfortran-12-dev                 # OpenBLAS's LAPACK, linked statically by -DPXL_PORTABLE=ON
  python3 expect                     # golden-test runner helpers and the pseudo-terminal REPL test
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
