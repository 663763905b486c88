#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/security/gen-certs.sh DIR - throw-away CAs and certificates for the TLS
# tests (EC P-256, valid two days), made with the openssl CLI.
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"

key() {
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null
}

# ca NAME SUBJECT
ca() {
	key "$1"
	openssl req -x509 -new -key "$1.key" -out "$1.crt" -days 2 -subj "$2" \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}

# leaf NAME CA SUBJECT EXTENSION-LINES
leaf() {
	key "$1"
	openssl req -new -key "$1.key" -out "$1.csr" -subj "$3" 2>/dev/null
	printf 'basicConstraints=CA:FALSE\n%s\n' "$4" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" \
		-set_serial "0x$(openssl rand -hex 8)" -days 2 \
		-extfile "$1.ext" -out "$1.crt" 2>/dev/null
	rm -f "$1.csr" "$1.ext"
}

srv='subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth'
cli='extendedKeyUsage=clientAuth'

ca ca "/CN=semd test CA"
ca rogue "/CN=rogue CA"
leaf server ca /CN=localhost "$srv"
leaf server2 ca /CN=localhost-2 "$srv"
leaf server3 ca /CN=localhost-3 "$srv"
leaf client ca /CN=backup-host "subjectAltName=DNS:backup-host.example,DNS:second.example
$cli"
leaf cnonly ca /CN=cn-only "$cli"
leaf badname ca "/CN=bad name" "$cli"
leaf intruder rogue /CN=intruder "subjectAltName=DNS:intruder.example
$cli"
printf -- '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n' >broken.crt
: >empty.pem
