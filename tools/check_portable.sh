#!/bin/sh
# Checks a PXL_PORTABLE pxl: stripped, under 64 MB, and needing no shared
# library beyond glibc's, zlib and zstd (no LLVM, readline, OpenBLAS, libstdc++).
# Usage: tools/check_portable.sh path/to/pxl
set -eu
pxl=${1:?usage: tools/check_portable.sh path/to/pxl}
size=$(wc -c < "$pxl")
limit=$((64 * 1024 * 1024))
status=0
echo "size: $size bytes (limit $limit)"
if [ "$size" -ge "$limit" ]; then echo "FAIL: $pxl is 64 MB or more"; status=1; fi
if ! file "$pxl" | grep -q ', stripped'; then echo "FAIL: $pxl is not stripped"; status=1; fi
extra=$(ldd "$pxl" | awk '{print $1}' |
  grep -v -E '^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|lib(c|m|dl|rt|pthread)\.so\.[0-9]+|libz\.so\.1|libzstd\.so\.1)$' || true)
if [ -n "$extra" ]; then echo "FAIL: needs shared libraries: $extra"; status=1; fi
[ "$status" -eq 0 ] && echo "ok: self-contained"
exit $status
