#!/bin/sh
# check_ops.sh BUILD — the operations side of cudaep, as `make test-ops`
# runs it against the binaries in BUILD (default: build):
#   1. `make install DESTDIR=... PREFIX=/usr` (and /usr/local) lays out the
#      expected tree; a second install keeps an edited cudaepd.conf; `make
#      uninstall` removes everything but that file;
#   2. `systemd-analyze verify` accepts the installed units (any warning is
#      a failure), template instances and man page links included;
#   3. the man pages format without a groff warning and name every flag,
#      key (with its default) and command that the programs' --help lists;
#   4. systemd-socket-activate --seqpacket starts cudaepd on the first
#      connection, which cudaepctl then talks to.
# A part whose tool is missing prints SKIP and why. Exit status 0 when
# every part that ran passed, 1 otherwise.
set -u

BUILD=${1:-build}
BIN=$(cd "$BUILD/bin" 2>/dev/null && pwd) || {
	echo "check_ops: $BUILD/bin does not exist (build first)" >&2
	exit 1
}
MAKE=${MAKE:-make}
FAILS=0
TMP=$(mktemp -d /tmp/cudaep-ops-XXXXXX)
DAEMON_PID=

cleanup() {
	if [ -n "$DAEMON_PID" ]; then
		kill -KILL "$DAEMON_PID" 2>/dev/null
		wait "$DAEMON_PID" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

pass() {
	echo "ok: $*"
}

skip() {
	echo "SKIP: $*"
}

# ------------------------------------------------------------- install

# install_into DIR PREFIX [VAR=VALUE...]: a quiet `make install`. The
# prebuilt kernel set is a small one of its own (one source, one
# architecture), so that the check does not compile every kernel.
install_into() {
	dir=$1
	prefix=$2
	shift 2
	if ! $MAKE --no-print-directory install BUILD="$BUILD" DESTDIR="$dir" \
		PREFIX="$prefix" KPACK="$TMP/kpack/kernels.pack" \
		KPACK_FLAGS="--arch 90 --ptx none --only concat" "$@" >"$TMP/make.log" 2>&1; then
		cat "$TMP/make.log"
		fail "make install DESTDIR=$dir PREFIX=$prefix"
		return 1
	fi
	return 0
}

# expect_file PATH MODE: PATH is a regular file with permission bits MODE.
expect_file() {
	if [ ! -f "$1" ] || [ -L "$1" ]; then
		fail "install: $1 is missing or not a regular file"
	elif [ "$(stat -c %a "$1")" != "$2" ]; then
		fail "install: $1 has mode $(stat -c %a "$1"), not $2"
	fi
}

expect_link() {
	if [ "$(readlink "$1")" != "$2" ]; then
		fail "install: $1 should be a link to $2, is '$(readlink "$1")'"
	fi
}

expect_line() {
	if ! grep -qx -- "$2" "$1"; then
		fail "install: $1 lacks the line '$2'"
	fi
}

check_install() {
	root=$TMP/root
	install_into "$root" /usr || return
	n=$FAILS
	for p in cudaepd cudaepctl cudaep-run; do
		expect_file "$root/usr/bin/$p" 755
	done
	expect_file "$root/usr/lib/libcudaep-client.so.0.1.0" 755
	expect_link "$root/usr/lib/libcudaep-client.so.0" libcudaep-client.so.0.1.0
	expect_link "$root/usr/lib/libcudaep-client.so" libcudaep-client.so.0
	soname=$(objdump -p "$root/usr/lib/libcudaep-client.so.0.1.0" 2>/dev/null |
		 awk '$1 == "SONAME" { print $2 }')
	[ -z "$soname" ] || [ "$soname" = libcudaep-client.so.0 ] ||
		fail "install: the library's soname is $soname"
	expect_file "$root/usr/lib/libcudaep-client.a" 644
	# Where the installed daemon looks for it (lib/cudaep/ beside bin/);
	# absent only where there is no NVRTC to build it.
	if [ -f "$TMP/kpack/kernels.pack" ]; then
		expect_file "$root/usr/lib/cudaep/kernels.pack" 644
	else
		skip "install: no NVRTC here, so no prebuilt kernel set to install"
	fi
	expect_file "$root/usr/include/cudaep.h" 644
	pc=$root/usr/lib/pkgconfig/cudaep-client.pc
	expect_file "$pc" 644
	expect_line "$pc" "prefix=/usr"
	expect_line "$pc" "Version: 0.1.0"
	for m in man1/cudaep-run.1 man5/cudaepd.conf.5 man8/cudaepd.8 \
		 man8/cudaepctl.8; do
		expect_file "$root/usr/share/man/$m" 644
	done
	units=$root/usr/lib/systemd/system
	for u in cudaepd.service cudaepd.socket cudaepd@.service \
		 cudaepd@.socket; do
		expect_file "$units/$u" 644
	done
	expect_line "$units/cudaepd.service" \
		"ExecStart=/usr/bin/cudaepd --config /etc/cudaep/cudaepd.conf"
	expect_line "$units/cudaepd@.service" \
		"ExecStart=/usr/bin/cudaepd --config /etc/cudaep/cudaepd.conf --device %i"
	expect_line "$units/cudaepd.socket" \
		"ListenSequentialPacket=/run/cudaep/cudaep.sock"
	expect_line "$units/cudaepd@.socket" \
		"ListenSequentialPacket=/run/cudaep/cudaep-%i.sock"
	expect_file "$root/usr/lib/sysusers.d/cudaep.conf" 644
	expect_file "$root/usr/lib/tmpfiles.d/cudaep.conf" 644
	expect_file "$root/etc/cudaep/cudaepd.conf.example" 644
	expect_file "$root/etc/cudaep/cudaepd.conf" 644
	cmp -s "$root/etc/cudaep/cudaepd.conf" systemd/cudaepd.conf.example ||
		fail "install: the first cudaepd.conf is not the example"

	# A second install keeps the administrator's file.
	echo "log_level = debug" >>"$root/etc/cudaep/cudaepd.conf"
	install_into "$root" /usr || return
	grep -q "^log_level = debug$" "$root/etc/cudaep/cudaepd.conf" ||
		fail "install: a second install overwrote cudaepd.conf"

	# Uninstall leaves only that file (and directories).
	if $MAKE --no-print-directory uninstall BUILD="$BUILD" DESTDIR="$root" \
		PREFIX=/usr >"$TMP/make.log" 2>&1; then
		left=$(cd "$root" && find . ! -type d | sort | tr '\n' ' ')
		[ "$left" = "./etc/cudaep/cudaepd.conf " ] ||
			fail "uninstall left: $left"
	else
		cat "$TMP/make.log"
		fail "make uninstall"
	fi

	# PREFIX=/usr/local: everything under it but /etc, paths rewritten.
	local_root=$TMP/local
	install_into "$local_root" /usr/local || return
	units=$local_root/usr/local/lib/systemd/system
	expect_file "$local_root/usr/local/bin/cudaepd" 755
	expect_line "$units/cudaepd.service" \
		"ExecStart=/usr/local/bin/cudaepd --config /etc/cudaep/cudaepd.conf"
	expect_line "$local_root/usr/local/lib/pkgconfig/cudaep-client.pc" \
		"prefix=/usr/local"
	expect_file "$local_root/usr/local/lib/sysusers.d/cudaep.conf" 644
	expect_file "$local_root/etc/cudaep/cudaepd.conf" 644
	[ "$FAILS" = "$n" ] && pass "make install / uninstall lay out the expected tree"
}

# --------------------------------------------------------------- units

check_units() {
	if ! command -v systemd-analyze >/dev/null 2>&1; then
		skip "systemd-analyze not found: the units are not verified"
		return
	fi
	root=$TMP/local
	[ -x "$root/usr/local/bin/cudaepd" ] || install_into "$root" /usr/local ||
		return
	# verify checks that ExecStart's binary exists: the units are checked
	# as installed, pointed at the binary of the staging tree.
	vdir=$TMP/units
	mkdir -p "$vdir"
	for u in "$root"/usr/local/lib/systemd/system/*; do
		sed "s|/usr/local/bin/cudaepd|$root/usr/local/bin/cudaepd|" "$u" \
			>"$vdir/$(basename "$u")"
	done
	# With MANPATH at the staged pages, verify also checks that every
	# Documentation=man: link resolves.
	if command -v man >/dev/null 2>&1; then
		man_opt=--man=yes
	else
		man_opt=--man=no
		skip "man not found: Documentation= links are not checked"
	fi
	out=$(cd "$vdir" && MANPATH=$root/usr/local/share/man \
	      systemd-analyze verify $man_opt ./cudaepd.service ./cudaepd.socket \
	      ./cudaepd@.service ./cudaepd@.socket ./cudaepd@0.service \
	      ./cudaepd@0.socket 2>&1)
	rc=$?
	if [ $rc -ne 0 ] || [ -n "$out" ]; then
		echo "$out"
		fail "systemd-analyze verify (status $rc)"
	else
		pass "systemd-analyze verify: the units, a template instance and their man pages"
	fi
}

# ----------------------------------------------------------- man pages

# mentions PAGE TEXT: PAGE's source has TEXT in roff spelling, where '-'
# is written '\-'.
mentions() {
	grep -qF -- "$(printf '%s' "$2" | sed 's/-/\\-/g')" "$1"
}

check_man() {
	if ! command -v groff >/dev/null 2>&1; then
		skip "groff not found: the man pages are not formatted"
	else
		n=$FAILS
		for p in daemon/cudaepd.8 daemon/cudaepd.conf.5 \
			 tools/cudaepctl/cudaepctl.8 tools/cudaep-run/cudaep-run.1; do
			err=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
			[ -z "$err" ] || fail "groff warns about $p: $err"
		done
		[ "$FAILS" = "$n" ] && pass "man pages format without warnings"
	fi

	n=$FAILS
	# Every flag of cudaepd --help, in cudaepd(8); its key and default in
	# cudaepd.conf(5), as "key" (default: VALUE)".
	"$BIN/cudaepd" --help >"$TMP/help" || fail "cudaepd --help"
	awk '/^  --[a-z]/ { flag = $1 } /^      default: / { print flag, $2 }' \
		"$TMP/help" >"$TMP/flags"
	[ -s "$TMP/flags" ] || fail "no flags found in cudaepd --help"
	while read -r flag def; do
		key=$(printf '%s' "${flag#--}" | tr - _)
		[ "$def" = "(empty)" ] && def=empty
		mentions daemon/cudaepd.8 "$flag" ||
			fail "cudaepd.8 does not describe $flag"
		grep -qF ".BR $key \" (default: $def)\"" daemon/cudaepd.conf.5 ||
			fail "cudaepd.conf.5 lacks key $key with default $def"
	done <"$TMP/flags"
	mentions daemon/cudaepd.8 --config || fail "cudaepd.8 lacks --config"

	# Every command and long option of cudaepctl --help, in cudaepctl(8).
	"$BIN/cudaepctl" --help >"$TMP/help" || fail "cudaepctl --help"
	awk '/^Commands:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }' \
		"$TMP/help" >"$TMP/cmds"
	[ -s "$TMP/cmds" ] || fail "no commands found in cudaepctl --help"
	while read -r cmd; do
		# roff spells a hyphen '\-'.
		pat=$(printf '%s' "$cmd" | sed 's/-/\\\\-/g')
		grep -qE "^\.BI? $pat( |\$)" tools/cudaepctl/cudaepctl.8 ||
			fail "cudaepctl.8 does not describe the command $cmd"
	done <"$TMP/cmds"
	for opt in $(grep -oE -- '--[a-z][a-z-]*' "$TMP/help" | sort -u); do
		mentions tools/cudaepctl/cudaepctl.8 "$opt" ||
			fail "cudaepctl.8 does not describe $opt"
	done

	# Every long option of cudaep-run --help, in cudaep-run(1).
	"$BIN/cudaep-run" --help >"$TMP/help" || fail "cudaep-run --help"
	for opt in $(grep -oE -- '--[a-z][a-z-]*' "$TMP/help" | sort -u); do
		mentions tools/cudaep-run/cudaep-run.1 "$opt" ||
			fail "cudaep-run.1 does not describe $opt"
	done
	[ "$FAILS" = "$n" ] && pass "man pages name every flag, key, default and command of --help"
}

# --------------------------------------------------- socket activation

check_activation() {
	if ! command -v systemd-socket-activate >/dev/null 2>&1; then
		skip "systemd-socket-activate not found: socket activation not tested here (the integration harness passes LISTEN_FDS by hand)"
		return
	fi
	sock=$TMP/act.sock
	log=$TMP/act.log
	systemd-socket-activate --seqpacket -l "$sock" "$BIN/cudaepd" \
		--log-level info 2>"$log" &
	DAEMON_PID=$!
	i=0
	while [ ! -S "$sock" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	# The first connection is what starts the daemon; it execs in place,
	# so the status it reports carries the activator's pid.
	out=$("$BIN/cudaepctl" --socket "$sock" status 2>&1)
	rc=$?
	n=$FAILS
	[ $rc -eq 0 ] || fail "cudaepctl status through the activated socket: $out"
	echo "$out" | grep -qx "pid:$DAEMON_PID" ||
		fail "the activated daemon is not the activator's process: $out"
	echo "$out" | grep -qx "socket_path:$sock" ||
		fail "the activated daemon does not report its socket: $out"
	grep -q "serving on $sock (socket activation)" "$log" ||
		fail "the daemon did not log socket activation"
	kill -TERM "$DAEMON_PID"
	wait "$DAEMON_PID"
	rc=$?
	DAEMON_PID=
	[ $rc -eq 0 ] || fail "the activated daemon exited with status $rc"
	[ -S "$sock" ] || fail "the daemon removed the socket the activator owns"
	if [ "$FAILS" = "$n" ]; then
		pass "systemd-socket-activate --seqpacket starts cudaepd on the first connection"
	else
		cat "$log"
	fi
}

check_install
check_units
check_man
check_activation
if [ "$FAILS" -ne 0 ]; then
	echo "check_ops: $FAILS failures"
	exit 1
fi
echo "check_ops: all passed"
