#!/bin/sh
# The Debian packages as a user meets them: built with cpack from this build, installed with
# `apt-get install ./agenthost_*.deb` on this Debian 12 machine, the service started with its
# unit's own command line as the agenthost user, talked to over HTTP, then purged.
# Needs root (or passwordless sudo); exit 77 (skipped) without. Usage: deb_test.sh BUILD_DIR WORK_DIR
set -eu
build=$1
work=$2
run() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }
if [ "$(id -u)" != 0 ] && ! sudo -n true 2>/dev/null; then
  echo "skipped: installing a package needs root or passwordless sudo"; exit 77
fi
if dpkg-query -W -f='${Status}' agenthost 2>/dev/null | grep -q "installed"; then
  echo "skipped: an agenthost package is already installed here; this test would replace it"; exit 77
fi
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"; mkdir -p "$work"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  # Nothing of the service may outlive the test (a leftover server would hold a port and a CPU).
  run pkill -u agenthost 2>/dev/null || true
  run env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q agenthost agenthost-dev >/dev/null 2>&1 || true
}
trap cleanup EXIT

(cd "$build" && cpack -G DEB -B "$work/packages" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
deb=$(ls "$work"/packages/agenthost_*.deb)
dev=$(ls "$work"/packages/agenthost-dev_*.deb)
dpkg-deb -c "$deb" | awk '{print $6}' > "$work/contents"
for f in ./usr/bin/agenthost ./usr/bin/agenthost-plugin-runner ./usr/lib/agenthost/plugins/scripted/plugin.toml \
         ./usr/lib/agenthost/plugins/torrent/torrent.so ./usr/share/agenthost/web/index.html ./usr/lib/systemd/system/agenthost.service \
         ./etc/agenthost/agenthost.toml ./usr/share/man/man1/agenthost.1 ./usr/share/bash-completion/completions/agenthost \
         ./usr/share/doc/agenthost/configuration.md ./usr/share/doc/agenthost/examples/media-automation/README.md; do
  grep -qx "$f" "$work/contents" || fail "$deb lacks $f"
done
grep -q example_c "$work/contents" && fail "the demo's example plugin is in the package"
dpkg-deb -c "$dev" > "$work/dev-contents"
grep -q './usr/include/agenthost/agenthost.h' "$work/dev-contents" || fail "$dev lacks the SDK header"
dpkg-deb -f "$deb" Depends > "$work/depends"
grep -q 'libsqlite3' "$work/depends" || fail "no shared-library dependencies in $deb: $(cat "$work/depends")"
echo "packages: $(basename "$deb") $(basename "$dev")"

run env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" "$dev" >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install"; }
getent passwd agenthost >/dev/null || fail "no agenthost user"
[ "$(stat -c %U:%a /var/lib/agenthost)" = "agenthost:750" ] || fail "/var/lib/agenthost is $(stat -c %U:%a /var/lib/agenthost)"
/usr/bin/agenthost --version | grep -q "plugin ABI" || fail "--version"
man -l /usr/share/man/man1/agenthost.1 >/dev/null 2>&1 || true
as_service() { run runuser -u agenthost -- "$@"; }
# A fresh install has no model: doctor says so and what to set, and is not ready (exit 1).
status=0
as_service /usr/bin/agenthost --config /etc/agenthost/agenthost.toml doctor >"$work/doctor.log" 2>&1 || status=$?
[ "$status" = 1 ] || { cat "$work/doctor.log"; fail "doctor exited $status on a fresh install (1: not ready without a model)"; }
grep -q "FAIL model: no model is configured yet" "$work/doctor.log" || { cat "$work/doctor.log"; fail "doctor does not say that no model is configured"; }
grep -q "NOT READY" "$work/doctor.log" || { cat "$work/doctor.log"; fail "doctor does not end NOT READY"; }

# Root using the service's data acts as the service's user, so the
# service can still open every file there afterwards.
run /usr/bin/agenthost --config /etc/agenthost/agenthost.toml run "hello" >"$work/root-run.log" 2>&1 || { cat "$work/root-run.log"; fail "a turn run as root on the service's data"; }
grep -q "no model is configured" "$work/root-run.log" || { cat "$work/root-run.log"; fail "root's turn did not reach the welcome answer"; }
root_owned=$(run find /var/lib/agenthost ! -user agenthost)
[ -z "$root_owned" ] || fail "root's command left files the service cannot own: $root_owned"
status=0
as_service /usr/bin/agenthost --config /etc/agenthost/agenthost.toml doctor >"$work/doctor2.log" 2>&1 || status=$?
[ "$status" = 1 ] && ! grep -q "cannot open" "$work/doctor2.log" || { cat "$work/doctor2.log"; fail "the service's doctor after a root command"; }

# The unit's own ExecStart, on a free port.
exec_start=$(sed -n 's/^ExecStart=//p' /usr/lib/systemd/system/agenthost.service)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# setpriv execs the server as the agenthost user, so $! is the server itself and kill reaches it
# (runuser stays as its parent and does not pass SIGTERM on, which left servers running).
as_root=""; [ "$(id -u)" = 0 ] || as_root="sudo -n"
# shellcheck disable=SC2086
$as_root setpriv --reuid=agenthost --regid=agenthost --init-groups $exec_start --listen "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
server_pid=$!
i=0
until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do
  i=$((i + 1)); [ $i -gt 100 ] && { cat "$work/serve.log"; fail "the service did not answer /health"; }
  sleep 0.1
done
token=$(run cat /var/lib/agenthost/server-token)
[ -n "$token" ] || fail "no generated token in /var/lib/agenthost/server-token"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/models")" = 401 ] || fail "/v1/models answered without a token"
model=$(curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:$port/v1/models" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])') || fail "/v1/models"
answer=$(curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d "{\"model\":\"$model\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}" "http://127.0.0.1:$port/v1/chat/completions")
echo "$answer" | grep -q "no model is configured" || fail "unexpected answer: $answer"
run kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
server_pid=""
pgrep -u agenthost >/dev/null 2>&1 && fail "the server did not stop on SIGTERM: $(pgrep -a -u agenthost)"

# The recipe's secrets file: the operator makes it, root's commands read it (the packaged
# config's secrets_file) and the service user's cannot; purge removes it with the rest.
run sh -c 'umask 077; echo QBITTORRENT_PASSWORD=not-a-real-one > /etc/agenthost/secrets.env'
run /usr/bin/agenthost --config /etc/agenthost/agenthost.toml doctor >"$work/doctor3.log" 2>&1 || true
grep -q "secrets:   /etc/agenthost/secrets.env: QBITTORRENT_PASSWORD from the file" "$work/doctor3.log" || { cat "$work/doctor3.log"; fail "root's doctor did not read the secrets file"; }
grep -q "not-a-real-one" "$work/doctor3.log" && fail "doctor printed a secret"
as_service /usr/bin/agenthost --config /etc/agenthost/agenthost.toml doctor >"$work/doctor4.log" 2>&1 || true
grep -q "secrets:   /etc/agenthost/secrets.env cannot be read by this user" "$work/doctor4.log" || { cat "$work/doctor4.log"; fail "the service user's doctor does not say the secrets file is not its to read"; }
run env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q agenthost agenthost-dev >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "purge"; }
[ ! -e /etc/agenthost/secrets.env ] || fail "purge left /etc/agenthost/secrets.env with its secrets"
[ ! -e /etc/agenthost ] || fail "purge left /etc/agenthost: $(ls -A /etc/agenthost)"
[ ! -e /etc/agenthost/agenthost.toml ] || fail "purge left /etc/agenthost/agenthost.toml"
[ ! -e /var/lib/agenthost ] || fail "purge left /var/lib/agenthost"
[ ! -e /usr/bin/agenthost ] || fail "purge left /usr/bin/agenthost"
echo "ok: built, installed with apt, served as the agenthost user, answered over HTTP, purged"
