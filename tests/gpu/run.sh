#!/bin/sh
# run.sh [PART...] — the GPU machine's check, over a tree packed by
# tests/gpu/pack.sh (binaries in .gpu-build, libraries in .device-libs).
# Parts (default: unit integration conformance): unit, integration (the
# same suites as CI with CUDAEP_TEST_GPU=1: GPU tests run, daemons use the
# CUDA backend), conformance (the ONNX node cases generated from the
# machine's onnx, through a CUDA daemon, next to the host backend's; conformance-cuda: the CUDA
# daemon's alone), rtt,
# warm (bench/warm_counters.py: the daemon's counters over warm runs of
# ResNet-50), datapath (bench/datapath: the trivial model's round trip next to the
# driver floor, H2D from a region), models (bench/models.py), profile (bench/profile over ResNet-50 and
# BERT-base: time per operator), many (bench/many_clients.py), generate (bench/generate.py: GPT-2 generating against transformers), zoo (tests/gpu/zoo.py: some 25
# architectures through both exporters in fp32, fp16 and bf16 sessions against PyTorch; $ZOO_ARGS
# are its options, e.g. ZOO_ARGS="--models hf --budget-s 400"), bisect (tests/gpu/bisect.py: which
# node of a model goes wrong in a precision; $BISECT_ARGS, e.g. BISECT_ARGS="--zoo mobilenet_v2
# --precision fp16"), or a test binary name (test_cuda_conv) to run only it. Full logs go to $OUT (or ./gpu-out); a summary is printed last.
set -u
ROOT=$(pwd)
B=$ROOT/.gpu-build
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$ROOT/.device-libs:$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDAEP_BUILD_DIR="$B" CUDAEP_TEST_GPU=1
# pack.sh ships the test binaries compressed with xz (Python's lzma
# unpacks them where the machine has no xz).
if [ -f "$B/tests.tar.xz" ] && [ ! -d "$B/tests" ]; then
	if command -v xz > /dev/null 2>&1; then
		tar -C "$B" -xJf "$B/tests.tar.xz" || exit 1
	else
		python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
			"$B/tests.tar.xz" "$B" || exit 1
	fi
fi
if [ -f "$B/lib/cudaep/kernels.pack.xz" ] && [ ! -f "$B/lib/cudaep/kernels.pack" ]; then
	if command -v xz > /dev/null 2>&1; then
		xz -dc "$B/lib/cudaep/kernels.pack.xz" > "$B/lib/cudaep/kernels.pack" || exit 1
	else
		python3 -c 'import lzma, sys; open(sys.argv[2], "wb").write(lzma.open(sys.argv[1]).read())' \
			"$B/lib/cudaep/kernels.pack.xz" "$B/lib/cudaep/kernels.pack" || exit 1
	fi
	chmod 0644 "$B/lib/cudaep/kernels.pack"
fi
# The unit tests' backends take kernels from it too (tests/unit/cuda_util.h).
[ -f "$B/lib/cudaep/kernels.pack" ] && export CUDAEP_TEST_KPACK="$B/lib/cudaep/kernels.pack"
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
[ $# -gt 0 ] || set -- unit integration conformance

note() {
	echo "$*" | tee -a "$SUMMARY"
}

suite() { # NAME BINARY...
	name=$1; shift
	fails=0
	for t in "$@"; do
		log="$OUT/$(basename "$t").log"
		# One test at a time: some compare the whole device's free
		# memory before and after, which other tests would move.
		"$t" --jobs 1 > "$log" 2>&1
		rc=$?
		line=$(grep 'Synthesis' "$log" | tail -1 | sed 's/.*Synthesis: //')
		skips=$(grep -c '^\[SKIP\]' "$log")
		if [ $rc -ne 0 ]; then
			fails=$((fails + 1))
			note "FAIL $(basename "$t"): $line"
			grep -E '^\[(FAIL|----)\]' "$log" | head -30 >> "$SUMMARY"
		else
			note "ok   $(basename "$t"): $line${skips:+ ($skips skip lines)}"
		fi
	done
	note "$name: $fails failing binaries"
}

nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader \
	> "$OUT/gpu.txt" 2>&1
note "GPU: $(cat "$OUT/gpu.txt")"
for part in "$@"; do
	case $part in
	unit) suite unit "$B"/tests/unit/test_* ;;
	integration) suite integration "$B"/tests/integration/test_* ;;
	test_*) suite "$part" "$B"/tests/*/"$part" ;;
	conformance|conformance-cuda)
		python3 tests/conformance/gen_cases.py "$OUT/cases" > "$OUT/gen_cases.log" 2>&1
		backends="cuda host"
		[ "$part" = conformance ] || backends=cuda
		for be in $backends; do
			python3 tests/conformance/run_conformance.py "$OUT/cases" --backend $be \
				--expected tests/conformance/expected_pass.txt --verbose \
				> "$OUT/conformance-$be.log" 2>&1
			note "conformance $be: $(grep '^conformance:' "$OUT/conformance-$be.log" | tail -1)"
		done
		grep -E '^(FAIL|fail)' "$OUT/conformance-cuda.log" | head -40 >> "$SUMMARY"
		rm -rf "$OUT/cases"
		;;
	rtt)
		"$B/bin/cudaepd" --socket /tmp/cudaep-rtt.sock --backend cuda > "$OUT/rtt-daemon.log" 2>&1 &
		pid=$!
		sleep 2
		"$B/bench/rtt" --socket /tmp/cudaep-rtt.sock --requests 100000 --clients 1,2,4,8 \
			> "$OUT/rtt.log" 2>&1
		kill "$pid"; wait "$pid"
		tail -15 "$OUT/rtt.log" >> "$SUMMARY"
		;;
	warm)
		python3 bench/warm_counters.py --build "$B" > "$OUT/warm.log" 2>&1
		tail -14 "$OUT/warm.log" >> "$SUMMARY"
		;;
	datapath)
		"$B/bench/datapath" --clients 1,4 --inflight 1,8 --runs 20000 --bandwidth 256 \
			> "$OUT/datapath.log" 2>&1
		cat "$OUT/datapath.log" >> "$SUMMARY"
		;;
	models)
		python3 bench/models.py --build "$B" --out "$OUT/models" > "$OUT/models.log" 2>&1
		tail -12 "$OUT/models.log" >> "$SUMMARY"
		rm -f "$OUT"/models/*.onnx "$OUT"/models/*.npy
		;;
	profile)
		python3 bench/models.py --export-only "$OUT/onnx" > "$OUT/export.log" 2>&1
		for m in resnet50 bert; do
			for p in fp32 fp16; do
				for b in 1 32; do
					log="$OUT/profile-$m-$p-b$b.log"
					"$B/bench/profile" "$OUT/onnx/$m.onnx" --precision $p \
						--dim batch=$b --top 12 > "$log" 2>&1
					head -14 "$log" >> "$SUMMARY"
				done
			done
		done
		rm -rf "$OUT/onnx"
		;;
	zoo)
		# shellcheck disable=SC2086 # ZOO_ARGS is a list of options
		python3 tests/gpu/zoo.py --build "$B" --out "$OUT/zoo" ${ZOO_ARGS:-} > "$OUT/zoo.log" 2>&1
		note "zoo: exit $? (ZOO_ARGS: ${ZOO_ARGS:-none}; full log zoo.log, records zoo/zoo.jsonl)"
		sed -n '/^==== zoo table/,$p' "$OUT/zoo.log" >> "$SUMMARY"
		# Few files come back from the machine: the daemon's logs as one,
		# no models (the records hold each failed export's message).
		cat "$OUT"/zoo/daemon/cudaepd-*.log > "$OUT/zoo/cudaepd.log" 2>/dev/null
		rm -rf "$OUT/zoo/exports" "$OUT/zoo/daemon"
		;;
	bisect)
		# shellcheck disable=SC2086 # BISECT_ARGS is a list of options
		python3 tests/gpu/bisect.py --build "$B" --out "$OUT/bisect" ${BISECT_ARGS:-} \
			> "$OUT/bisect.log" 2>&1
		note "bisect: exit $? (BISECT_ARGS: ${BISECT_ARGS:-none}; full log bisect.log)"
		sed -n '/^==== bisect summary/,$p' "$OUT/bisect.log" >> "$SUMMARY"
		cat "$OUT"/bisect/daemon/cudaepd-*.log > "$OUT/bisect/cudaepd.log" 2>/dev/null
		rm -rf "$OUT/bisect/models" "$OUT/bisect/daemon"
		;;
	generate)
		# shellcheck disable=SC2086 # GEN_ARGS is a list of options
		python3 bench/generate.py --build "$B" --out "$OUT/generate" ${GEN_ARGS:-} \
			> "$OUT/generate.log" 2>&1
		note "generate: exit $? (GEN_ARGS: ${GEN_ARGS:-none}; full log generate.log)"
		sed -n '/^model /,$p' "$OUT/generate.log" >> "$SUMMARY"
		cat "$OUT"/generate/daemon/cudaepd-*.log > "$OUT/generate/cudaepd.log" 2>/dev/null
		rm -rf "$OUT/generate/daemon" "$OUT"/generate/*.onnx
		;;
	many)
		python3 bench/many_clients.py --build "$B" ${MANY_ARGS:-} > "$OUT/many.log" 2>&1
		tail -9 "$OUT/many.log" >> "$SUMMARY"
		;;
	*) note "unknown part $part" ;;
	esac
done
echo "==== summary"
cat "$SUMMARY"
