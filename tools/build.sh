#!/usr/bin/env bash
# Sets up and builds pxl: installs the system packages (tools/setup-deps.sh),
# configures with Ninja (warnings are errors) and builds with every core.
# Both README commands and .ci/run start here, so they cannot drift apart.
#   PXL_BUILD_DIR   build directory (default: build, which gives build/bin/pxl)
#   extra arguments go to cmake, e.g. -DPXL_SANITIZE=address,undefined
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/setup-deps.sh
build_dir=${PXL_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPXL_WERROR=ON "$@"
cmake --build "$build_dir" -j"$(nproc)"
