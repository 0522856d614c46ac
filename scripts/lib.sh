# Shared by podpath's scripts: install what podpath needs on Debian and start
# the services it uses. Everything here is idempotent; sourcing it does nothing.
set -eu

REPO=$(cd "$(dirname "$0")/.." && pwd)
GO_VERSION=1.26.8
PODPATH="$REPO/bin/podpath"
export PATH="/usr/local/go/bin:$PATH"
export DATABASE_URL="${DATABASE_URL:-postgres://podpath:podpath@localhost:5432/podpath}"
LOG_DIR=${PODPATH_LOG_DIR:-/var/log/podpath}

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

need_root() {
  [ "$(id -u)" = 0 ] || die "run this as root (it installs packages and starts Docker and Postgres)"
}

# install_packages installs the Debian packages podpath needs that are missing.
install_packages() {
  want="docker.io postgresql debootstrap chromium gcc libc6-dev libseccomp-dev git curl ca-certificates unzip procps iproute2 jq"
  missing=""
  for p in $want; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    say "installing Debian packages:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
}

# ensure_go installs Go $GO_VERSION from the Go module proxy when the machine
# has no Go that new (Debian's is older).
ensure_go() {
  if command -v go >/dev/null 2>&1; then
    have=$(go env GOVERSION | sed 's/^go//')
    if [ "$(printf '%s\n%s\n' "$GO_VERSION" "$have" | sort -V | head -1)" = "$GO_VERSION" ]; then
      return
    fi
  fi
  say "installing Go $GO_VERSION from the Go module proxy"
  proxy=$(go env GOPROXY 2>/dev/null | cut -d, -f1 || true)
  [ -n "$proxy" ] && [ "$proxy" != direct ] && [ "$proxy" != off ] || proxy=https://proxy.golang.org
  tmp=$(mktemp -d)
  curl -fsSL -o "$tmp/go.zip" "$proxy/golang.org/toolchain/@v/v0.0.1-go$GO_VERSION.linux-amd64.zip"
  unzip -q "$tmp/go.zip" -d "$tmp"
  rm -rf /usr/local/go
  mv "$tmp/golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-amd64" /usr/local/go
  chmod +x /usr/local/go/bin/* /usr/local/go/pkg/tool/*/* 2>/dev/null || true
  rm -rf "$tmp"
  go version
}

build_podpath() {
  say "building podpath"
  mkdir -p "$REPO/bin"
  (cd "$REPO" && CGO_ENABLED=0 go build -o "$PODPATH" .)
}

# start_dockerd starts the Docker engine unless it answers already: through
# systemd where it runs, by hand elsewhere (containers and CI have no init).
start_dockerd() {
  if docker info >/dev/null 2>&1; then return; fi
  say "starting dockerd"
  mkdir -p "$LOG_DIR"
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    systemctl start docker
  else
    setsid nohup dockerd >"$LOG_DIR/dockerd.log" 2>&1 </dev/null &
  fi
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && return
    sleep 1
  done
  tail -20 "$LOG_DIR/dockerd.log" 2>/dev/null || true
  die "dockerd did not start within 60 s (log: $LOG_DIR/dockerd.log)"
}

# start_postgres starts the local PostgreSQL cluster and makes podpath's role
# (allowed to create the test databases) and database.
start_postgres() {
  ver=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)
  [ -n "$ver" ] || die "PostgreSQL is not installed (apt-get install -y postgresql)"
  if ! pg_isready -q -h localhost; then
    say "starting PostgreSQL $ver"
    pg_ctlcluster "$ver" main start
    for _ in $(seq 1 30); do pg_isready -q -h localhost && break; sleep 1; done
  fi
  su postgres -c "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname='podpath'\"" | grep -q 1 ||
    su postgres -c "psql -qc \"CREATE ROLE podpath LOGIN CREATEDB PASSWORD 'podpath'\""
  su postgres -c "psql -qtAc \"SELECT 1 FROM pg_database WHERE datname='podpath'\"" | grep -q 1 ||
    su postgres -c "psql -qc 'CREATE DATABASE podpath OWNER podpath'"
}

# prepare_host applies podpath doctor's safe fixes (the runc wrapper where
# the kernel refuses capabilities, inotify limits) and shows the rest.
prepare_host() {
  say "checking the host (podpath doctor --fix)"
  "$PODPATH" doctor --fix || die "podpath doctor found problems it cannot fix (above)"
}

build_node_image() {
  say "node image (built once, then reused while its inputs are unchanged)"
  "$PODPATH" nodeimage build
}

# build_policy_agent builds the NetworkPolicy agent a host cluster of the
# Kubernetes backend runs (TestSandbox's kube step puts it on its host);
# about 6 minutes the first time, then from the cache.
build_policy_agent() {
  say "policy agent image for Kubernetes hosts (built once, then cached)"
  "$PODPATH" nodeimage policy-agent >/dev/null
}

# ensure_helm installs Helm (v4, from the Go module proxy) into the cache
# once; scripts/kube-up installs the chart with it.
HELM_VERSION=v4.3.2
HELM=${HELM:-/var/cache/podpath/bin/helm}
ensure_helm() {
  if [ -x "$HELM" ] && "$HELM" version --short 2>/dev/null | grep -q "^${HELM_VERSION%.*}"; then
    return
  fi
  say "installing Helm $HELM_VERSION from the Go module proxy (about 2 minutes, once)"
  mkdir -p "$(dirname "$HELM")"
  GOBIN=$(dirname "$HELM") go install "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
}

# The host cluster scripts/kube-up makes and scripts/kube-down removes.
KUBE_HOST=${PODPATH_KUBE_HOST:-kubehost}
KUBE_HOST_KUBECONFIG=${PODPATH_KUBE_HOST_KUBECONFIG:-/var/lib/podpath/$KUBE_HOST.kubeconfig}

# start_mirror runs a registry mirror for learner nodes, as a site with no
# internet would (docs/LABS.md "Images without internet"): the CNCF
# Distribution registry built from the Go module proxy (`podpath mirror
# registry`), on port 5001 of this host, filled with nginx and busybox built
# from Debian packages under Docker Hub's names (`podpath mirror push`).
# Nodes reach it at the address of Docker's default bridge on this host;
# PODPATH_REGISTRY_MIRRORS, exported, points their containerd at it.
MIRROR_PORT=${MIRROR_PORT:-5001}
MIRROR_DIR=${MIRROR_DIR:-/var/lib/podpath-mirror}
start_mirror() {
  say "registry mirror for the nodes (built once, then cached): nginx and busybox from Debian packages"
  registry=$("$PODPATH" mirror registry)
  mkdir -p "$MIRROR_DIR" "$LOG_DIR"
  cat >"$MIRROR_DIR/config.yml" <<CONFIG
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $MIRROR_DIR/data
http:
  addr: 0.0.0.0:$MIRROR_PORT
CONFIG
  if ! curl -fsS "http://127.0.0.1:$MIRROR_PORT/v2/" >/dev/null 2>&1; then
    setsid nohup "$registry" serve "$MIRROR_DIR/config.yml" >"$LOG_DIR/registry.log" 2>&1 </dev/null &
    for _ in $(seq 1 30); do
      curl -fsS "http://127.0.0.1:$MIRROR_PORT/v2/" >/dev/null 2>&1 && break
      sleep 1
    done
    curl -fsS "http://127.0.0.1:$MIRROR_PORT/v2/" >/dev/null 2>&1 || { tail -20 "$LOG_DIR/registry.log"; die "the registry did not start on port $MIRROR_PORT (log: $LOG_DIR/registry.log)"; }
  fi
  "$PODPATH" mirror push "127.0.0.1:$MIRROR_PORT" >/dev/null
  gw=$(docker network inspect bridge --format '{{(index .IPAM.Config 0).Gateway}}')
  [ -n "$gw" ] || die "Docker's default bridge has no gateway address for the nodes to reach the mirror"
  export PODPATH_REGISTRY_MIRRORS="docker.io=http://$gw:$MIRROR_PORT"
  echo "PODPATH_REGISTRY_MIRRORS=$PODPATH_REGISTRY_MIRRORS"
}
