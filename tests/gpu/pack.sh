#!/bin/sh
# pack.sh [BUILD [KPACK]] — gathers what tests/gpu/run.sh needs on the GPU machine,
# which has no build dependencies: the programs, the client library, the
# unit, integration and engine-conformance test binaries (stripped) into
# .gpu-build/, and the shared libraries they load into .device-libs/ (both
# git-ignored through .git/info/exclude). Then, with the device tool:
#   run  carry [".gpu-build", ".device-libs"]  command "sh tests/gpu/run.sh"
set -eu
B=${1:-build}
K=${2:-}
D=.gpu-build
rm -rf "$D" .device-libs
mkdir -p "$D/bin" "$D/lib" "$D/tests/unit" "$D/tests/integration" "$D/tests/conformance" "$D/bench"
cp "$B"/bin/* "$D/bin/"
cp "$B/lib/libcudaep-client.so" "$D/lib/"
for f in "$B"/tests/unit/test_* "$B"/tests/integration/test_*; do
	case "$f" in *.d|*.o) continue ;; esac
	[ -x "$f" ] && cp "$f" "$D/${f#"$B"/}"
done
[ -x "$B/tests/cudaepd-fault" ] && cp "$B/tests/cudaepd-fault" "$D/tests/"
[ -x "$B/tests/conformance/engine_conf" ] && cp "$B/tests/conformance/engine_conf" "$D/tests/conformance/"
for f in "$B"/bench/*; do [ -x "$f" ] && [ -f "$f" ] && cp "$f" "$D/bench/"; done
find "$D" -type f -perm -u+x -exec strip --strip-unneeded {} + 2>/dev/null || true
../shared/tools/device-libs.sh .device-libs "$D"/bin/* "$D"/lib/* "$D"/tests/unit/test_* >/dev/null
# The test binaries share most of their code (each links the engine and
# the kernel sources): xz, whose window spans several binaries, makes them
# about a fifth of what gzip does (gzip's came to 46 MiB of the 64 MiB the
# device tool may carry); run.sh unpacks them.
tar -C "$D" -cf - tests | xz -6 -T2 > "$D/tests.tar.xz"
rm -rf "$D/tests"
# The prebuilt kernels, where the daemon looks for them
# (lib/cudaep/kernels.pack beside bin/), compressed likewise.
if [ -n "$K" ] && [ -f "$K" ]; then
	mkdir -p "$D/lib/cudaep"
	xz -6 -T2 < "$K" > "$D/lib/cudaep/kernels.pack.xz"
fi
du -sh "$D" .device-libs
