#!/bin/sh
# systemd_boot.sh BUILD — follows README.md's "Installing and running under
# systemd" against a real systemd running as PID 1, as `make test-systemd`
# runs it (root only; not part of `make test`).
#
# systemd boots in private PID and mount namespaces (unshare), with tmpfs
# over /tmp, /run, /var/tmp, /var/cache, /var/log, /var/lib/systemd and
# /usr/local, and a copy of /etc, so that nothing it or the install writes
# reaches the machine: booting systemd empties /tmp and runs sysusers.
# Then, inside (nsenter), the README's steps: make install PREFIX=/usr/local
# (from a staging tree made outside), systemd-sysusers, systemd-tmpfiles
# --create, daemon-reload, enable --now cudaepd.socket; and checks:
#   1. the first `cudaepctl status` starts cudaepd.service by socket
#      activation, as user cudaep, and the socket is 0660 root:cudaep;
#   2. a member of group cudaep (not root) connects; another user cannot;
#   3. `cudaepctl metrics` and `cudaepctl top --once` work;
#   4. the journal has the daemon's lines with their priorities;
#   5. `systemctl reload` (SIGHUP) is logged, the watchdog keeps it alive,
#      `systemctl stop` stops it cleanly (Type=notify, STOPPING=1), and
#      the socket restarts it on the next connection.
# Exit 0 when all passed, 1 when one failed, 77 (SKIP) when the machine
# cannot do it (not root, no unshare, systemd missing or refusing to boot).
set -u

BUILD=${1:-build}
MAKE=${MAKE:-make}
FAILS=0
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

skip() {
	echo "SKIP: systemd_boot: $*"
	exit 77
}
fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}
pass() {
	echo "ok: $*"
}

# ------------------------------------------------------------- inside
# Run as PID 1 of the new namespaces: hide the machine's writable places,
# then become systemd.
if [ "${2:-}" = "--pid1" ]; then
	STAGE=$3
	mount --make-rprivate / || exit 1
	mount -t tmpfs -o mode=0755 tmpfs /mnt || exit 1
	mkdir -p /mnt/etc /mnt/usrlocal
	# The staging tree of `make install DESTDIR=...` (made outside: the
	# build needs nothing systemd does) is what `make install` lays out;
	# copied before its directory is hidden below.
	cp -a "$STAGE/usr/local/." /mnt/usrlocal/ || exit 1
	cp -a /etc/. /mnt/etc/ && cp -a "$STAGE/etc/cudaep" /mnt/etc/ || exit 1
	for d in /tmp /run /var/tmp /var/cache /var/log; do
		mount -t tmpfs -o mode=0755 tmpfs "$d" || exit 1
	done
	chmod 1777 /tmp /var/tmp
	mkdir -p /var/lib/systemd && mount -t tmpfs tmpfs /var/lib/systemd || exit 1
	mount --bind /mnt/etc /etc || exit 1
	mount --bind /mnt/usrlocal /usr/local || exit 1
	# A minimal boot: the sockets, the journal, nothing of the machine's
	# own services beyond what sysinit pulls in.
	mkdir -p /etc/systemd/system
	cat > /etc/systemd/system/cudaep-test.target <<EOF
[Unit]
Description=cudaep boot test
Requires=sysinit.target sockets.target
After=sysinit.target sockets.target
AllowIsolate=yes
EOF
	exec env container=cudaep-test /lib/systemd/systemd --system \
		--unit=cudaep-test.target --log-target=console --log-level=notice
fi

# ------------------------------------------------------------ outside
[ "$(id -u)" -eq 0 ] || skip "needs root (it boots systemd in namespaces)"
command -v unshare >/dev/null || skip "no unshare"
command -v nsenter >/dev/null || skip "no nsenter"
[ -x /lib/systemd/systemd ] || skip "no /lib/systemd/systemd"
[ -x "$BUILD/bin/cudaepd" ] || { echo "systemd_boot: build first ($BUILD/bin)"; exit 1; }

TMP=$(mktemp -d /var/tmp/cudaep-boot-XXXXXX)
STAGE=$TMP/stage
LOG=$TMP/systemd.log
NSPID=
UNSHARE_PID=

cleanup() {
	if [ -n "$UNSHARE_PID" ]; then
		kill -KILL "$UNSHARE_PID" 2>/dev/null
		[ -n "$NSPID" ] && kill -KILL "$NSPID" 2>/dev/null
		wait "$UNSHARE_PID" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# README: make install (into a staging root first: see above).
$MAKE -s -C "$ROOT" install BUILD="$BUILD" DESTDIR="$STAGE" PREFIX=/usr/local \
	>"$TMP/install.log" 2>&1 || { cat "$TMP/install.log"; echo "FAIL: make install"; exit 1; }

unshare --pid --mount --fork --mount-proc sh "$SELF" "$BUILD" --pid1 "$STAGE" \
	>"$LOG" 2>&1 &
UNSHARE_PID=$!

# systemd is the child of unshare, PID 1 inside.
i=0
while [ $i -lt 100 ]; do
	NSPID=$(ps -o pid= --ppid "$UNSHARE_PID" 2>/dev/null | tr -d ' ' | head -1)
	[ -n "$NSPID" ] && [ "$(cat /proc/"$NSPID"/comm 2>/dev/null)" = systemd ] && break
	if ! kill -0 "$UNSHARE_PID" 2>/dev/null; then
		tail -20 "$LOG"
		skip "systemd did not start in namespaces here"
	fi
	sleep 0.1
	i=$((i + 1))
done
[ -n "$NSPID" ] || skip "systemd did not start in namespaces here"

IN() {
	nsenter -t "$NSPID" -m -p -- "$@"
}

# Booted far enough to take requests?
i=0
until IN systemctl is-system-running >/dev/null 2>&1 ||
      [ "$(IN systemctl is-system-running 2>/dev/null)" = degraded ]; do
	i=$((i + 1))
	if [ $i -gt 300 ]; then
		tail -30 "$LOG"
		skip "systemd did not finish booting in namespaces here"
	fi
	sleep 0.1
done
echo "systemd $(IN systemctl --version | head -1 | cut -d' ' -f2) booted as PID 1 in namespaces"

# README: the rest of the steps, as written.
IN systemd-sysusers || fail "systemd-sysusers"
IN systemd-tmpfiles --create >/dev/null 2>&1
IN test -d /run/cudaep || fail "systemd-tmpfiles did not create /run/cudaep"
IN systemctl daemon-reload || fail "daemon-reload"
IN systemctl enable --now cudaepd.socket >/dev/null 2>&1 || fail "enable --now cudaepd.socket"

[ "$(IN systemctl is-active cudaepd.socket)" = active ] && pass "cudaepd.socket is listening" ||
	fail "cudaepd.socket is $(IN systemctl is-active cudaepd.socket)"
[ "$(IN systemctl is-active cudaepd.service)" != active ] && pass "cudaepd.service not started yet" ||
	fail "cudaepd.service started before any connection"
set -- $(IN stat -c '%a %U %G' /run/cudaep/cudaep.sock 2>/dev/null)
[ "${1:-}" = 660 ] && [ "${3:-}" = cudaep ] && pass "socket 0660 ${2:-} ${3:-}" ||
	fail "socket mode/owner: ${1:-?} ${2:-?} ${3:-?}"

# 1. The first connection starts the service.
if OUT=$(IN /usr/local/bin/cudaepctl status 2>&1); then
	pass "cudaepctl status through socket activation"
	echo "$OUT" | sed 's/^/    /'
else
	fail "cudaepctl status: $OUT"
	IN journalctl -u cudaepd --no-pager | tail -20
fi
[ "$(IN systemctl is-active cudaepd.service)" = active ] && pass "cudaepd.service is active" ||
	fail "cudaepd.service is $(IN systemctl is-active cudaepd.service)"
MAINPID=$(IN systemctl show -p MainPID --value cudaepd.service)
USER_OF=$(IN ps -o user= -p "$MAINPID" 2>/dev/null | tr -d ' ')
[ "$USER_OF" = cudaep ] && pass "cudaepd runs as user cudaep (pid $MAINPID in the namespace)" ||
	fail "cudaepd runs as '$USER_OF'"

# 2. Group members may connect; others may not.
GID=$(IN getent group cudaep | cut -d: -f3)
if IN setpriv --reuid=65534 --regid=65534 --groups="$GID" /usr/local/bin/cudaepctl ping >/dev/null 2>&1; then
	pass "a member of group cudaep connects"
else
	fail "a member of group cudaep cannot connect"
fi
if IN setpriv --reuid=65534 --regid=65534 --clear-groups /usr/local/bin/cudaepctl ping >/dev/null 2>&1; then
	fail "a user outside group cudaep connected"
else
	pass "a user outside group cudaep is refused"
fi

# 3. metrics and top.
M=$(IN /usr/local/bin/cudaepctl metrics 2>&1)
echo "$M" | grep -q '^cudaep_info{' && echo "$M" | grep -q '^# TYPE cudaep_connections gauge' &&
	pass "cudaepctl metrics ($(echo "$M" | grep -c '^cudaep_') samples)" ||
	fail "cudaepctl metrics: $(echo "$M" | head -5)"
T=$(IN /usr/local/bin/cudaepctl top --once 2>&1)
echo "$T" | grep -q '^cudaepd ' && pass "cudaepctl top --once" || fail "cudaepctl top --once: $T"

# 4. The journal has the daemon's lines with priorities.
J=$(IN journalctl -u cudaepd.service -o short-monotonic --no-pager -p info 2>&1)
echo "$J" | grep -q 'serving' && pass "the journal has cudaepd's start-up line" ||
	fail "no start-up line in the journal: $(echo "$J" | tail -5)"

# 5. reload, stop, restart by the socket.
IN systemctl reload cudaepd.service || fail "systemctl reload"
sleep 1
IN journalctl -u cudaepd.service --no-pager | grep -qi 'reload' &&
	pass "systemctl reload: SIGHUP logged" || fail "no reload line in the journal"
IN systemctl stop cudaepd.service || fail "systemctl stop"
R=$(IN systemctl show -p Result --value cudaepd.service)
[ "$R" = success ] && pass "stopped cleanly (Result=$R)" || fail "stop Result=$R"
IN /usr/local/bin/cudaepctl ping >/dev/null 2>&1 && [ "$(IN systemctl is-active cudaepd.service)" = active ] &&
	pass "the socket starts it again on the next connection" || fail "no restart by the socket"
IN systemctl stop cudaepd.socket cudaepd.service

echo "systemd_boot: $FAILS failure(s)"
[ $FAILS -eq 0 ]
