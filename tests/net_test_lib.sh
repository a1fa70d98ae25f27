# Shared by the network tests (sourced): a scratch directory removed at exit
# with the server whose pid is in $pid, pass and fail counts, a free port on
# loopback, waiting for a server, and comparing pcr-dump's output on a local
# path and a remote one. Needs $tools.
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# free_port BASE: the first port from BASE up that nothing listens on (each
# test has a range of its own below the ephemeral ports).
free_port() {
  local port
  for port in $(seq "$1" $(($1 + 50))); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
}

# wait_port PORT PID: returns once something listens on PORT while process
# PID runs (at most 10 s); exits the test with a message otherwise.
wait_port() {
  for _ in $(seq 200); do
    kill -0 "$2" 2>/dev/null || { echo "the test server (pid $2) for port $1 exited"; exit 1; }
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return
    sleep 0.05
  done
  echo "nothing listens on port $1 after 10 s"
  exit 1
}

# same DESCRIPTION LOCAL REMOTE PCR-DUMP-ARGS...: pcr-dump prints the same for both.
same() {
  local what=$1 local_path=$2 remote_path=$3
  shift 3
  if "$tools/pcr-dump" "$@" "$local_path" >"$tmp/local.out" 2>&1 &&
     "$tools/pcr-dump" "$@" "$remote_path" >"$tmp/remote.out" 2>"$tmp/remote.err" &&
     cmp -s "$tmp/local.out" "$tmp/remote.out"; then ok; else bad "$what"; cat "$tmp/remote.err"; fi
}

# start_nginx ROOT PORT: nginx ($nginx) serving ROOT with byte ranges on
# 127.0.0.1:PORT, its logs in $tmp/logs (access.log); returns once it
# listens, its pid in $nginx_pid.
start_nginx() {
  mkdir -p "$tmp/logs"
  cat >"$tmp/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/logs/error.log;
events {}
http {
  access_log $tmp/logs/access.log;
  client_body_temp_path $tmp/logs;
  proxy_temp_path $tmp/logs;
  fastcgi_temp_path $tmp/logs;
  uwsgi_temp_path $tmp/logs;
  scgi_temp_path $tmp/logs;
  server {
    listen 127.0.0.1:$2;
    root $1;
  }
}
CONF
  "$nginx" -c "$tmp/nginx.conf" -p "$tmp" &
  nginx_pid=$!
  wait_port "$2" "$nginx_pid"
}

# same_objects DESCRIPTION LOCAL_DIR PREFIX: every file of LOCAL_DIR is the
# object PREFIX/NAME of the bucket pcrtest at $endpoint, byte for byte.
same_objects() {
  local what=$1 dir=$2 prefix=$3 f n differ=0
  for f in "$dir"/*; do
    n=$(basename "$f")
    /usr/bin/python3 -c 'import sys, urllib.request; open(sys.argv[2], "wb").write(urllib.request.urlopen(sys.argv[1]).read())' \
      "$endpoint/pcrtest/$prefix/$n" "$tmp/object" 2>/dev/null && cmp -s "$f" "$tmp/object" || { differ=1; echo "  $n differs"; }
  done
  [ "$differ" -eq 0 ] && ok || bad "$what"
}
