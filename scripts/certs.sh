#!/usr/bin/env bash
# Creates a local CA and a server certificate for localhost and 127.0.0.1, once.
# Usage: scripts/certs.sh [dir]   (default .local/tls)
#   ca.pem / ca-key.pem          the local CA (clients trust ca.pem)
#   server.pem / server-key.pem  the gateway's certificate (SAN DNS:localhost, IP:127.0.0.1)
# Idempotent: existing files are kept unless the server certificate no longer verifies against
# the CA or expires within a day, in which case the server certificate is issued again.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${1:-$ROOT/.local/tls}"
mkdir -p "$DIR"
chmod 700 "$DIR"
cd "$DIR"

if [[ ! -s ca.pem || ! -s ca-key.pem ]]; then
  echo "creating the local CA in $DIR/ca.pem" >&2
  openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 \
    -keyout ca-key.pem -out ca.pem -subj "/CN=Clinical Embedding Gateway local CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
  chmod 600 ca-key.pem
  rm -f server.pem server-key.pem
fi

if [[ -s server.pem && -s server-key.pem ]] \
  && openssl verify -CAfile ca.pem server.pem >/dev/null 2>&1 \
  && openssl x509 -in server.pem -noout -checkend 86400 >/dev/null; then
  exit 0
fi

echo "issuing the server certificate for localhost, 127.0.0.1 in $DIR/server.pem" >&2
ext="$(mktemp)"
trap 'rm -f "$ext" server.csr' EXIT
cat > "$ext" <<'EXT'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1
EXT
openssl req -new -newkey rsa:2048 -nodes -sha256 -keyout server-key.pem -out server.csr \
  -subj "/CN=localhost" 2>/dev/null
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 825 -sha256 \
  -extfile "$ext" -out server.pem 2>/dev/null
chmod 600 server-key.pem
