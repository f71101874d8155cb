#!/usr/bin/env bash
# make-test-certs.sh DIR - the certificates the identity tests need, made
# with the openssl CLI: a cluster CA; node1 (EC P-256), node2 (EC), node3
# (RSA 2048) with OU=node; client1 with OU=client; a node without an OU; and
# node1 again, signed by a rogue CA; two clients with usages TLS refuses; a CRL revoking client1, the same CRL expired, a
# client whose CN has a space and an expired client certificate. Keys sit beside their certificates.
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"
ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }
rsa() { openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1.key" 2>/dev/null; }
ca() { # name
	ec "$1"
	openssl req -x509 -new -key "$1.key" -subj "/CN=$1" -days 3650 -out "$1.crt" 2>/dev/null
}
leaf() { # name subject ca [extfile]
	openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
	openssl x509 -req -in "$1.csr" -CA "$3.crt" -CAkey "$3.key" -CAcreateserial -days 365 \
		${4:+-extfile "$4"} -out "$1.crt" 2>/dev/null
	rm -f "$1.csr"
}
ca ca
ca rogue-ca
ec node1 && leaf node1 "/OU=node/CN=node1" ca
ec node2 && leaf node2 "/OU=node/CN=node2" ca
rsa node3 && leaf node3 "/OU=node/CN=node3" ca
ec client1 && leaf client1 "/OU=client/CN=client1" ca
ec noou && leaf noou "/CN=noou" ca
ec spaced && leaf spaced "/OU=client/CN=ops-1 x" ca
ec rogue-node1 && leaf rogue-node1 "/OU=node/CN=node1" rogue-ca
# Usages TLS refuses for a client, so the proof does too: extendedKeyUsage
# serverAuth only (client-server), a CA's basicConstraints (client-ca).
printf 'extendedKeyUsage=serverAuth\n' >server.ext
printf 'basicConstraints=CA:TRUE\n' >ca.ext
ec client-server && leaf client-server "/OU=client/CN=client-server" ca server.ext
ec client-ca && leaf client-ca "/OU=client/CN=client-ca" ca ca.ext
rm -f server.ext ca.ext
# For the CRL and expiry checks: crl.pem (from `openssl ca`, whose database
# sits in ca-db/) revokes client1; expired (OU=client) ended in 2021.
mkdir -p ca-db
: >ca-db/index.txt
echo 1000 >ca-db/serial
echo 01 >ca-db/crlnumber
cat >ca-db/ca.cnf <<CNF
[ca]
default_ca = t
[t]
database = ca-db/index.txt
new_certs_dir = ca-db
serial = ca-db/serial
crlnumber = ca-db/crlnumber
certificate = ca.crt
private_key = ca.key
default_md = sha256
policy = p
[p]
organizationalUnitName = supplied
commonName = supplied
CNF
ec expired
openssl req -new -key expired.key -subj "/OU=client/CN=expired" -out expired.csr 2>/dev/null
openssl ca -batch -config ca-db/ca.cnf -notext -startdate 20200101000000Z \
	-enddate 20210101000000Z -in expired.csr -out expired.crt 2>/dev/null
rm -f expired.csr
openssl ca -config ca-db/ca.cnf -revoke client1.crt 2>/dev/null
openssl ca -config ca-db/ca.cnf -gencrl -crldays 3650 -out crl.pem 2>/dev/null
# The same CRL lapsed: nextUpdate in 2021 (it refuses every certificate).
openssl ca -config ca-db/ca.cnf -gencrl -crl_lastupdate 20200101000000Z \
	-crl_nextupdate 20210101000000Z -out crl-expired.pem 2>/dev/null
# CRLs of other CAs: rogue-ca (another name: mbedtls skipped it silently)
# and same-name (CN=ca, another key: mbedtls' BADCRL_NOT_TRUSTED).
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out same-name.key 2>/dev/null
openssl req -x509 -new -key same-name.key -subj "/CN=ca" -days 3650 -out same-name.crt 2>/dev/null
for other in rogue-ca same-name; do
	mkdir -p "$other-db"
	: >"$other-db/index.txt"
	echo 01 >"$other-db/crlnumber"
	sed "s/ca-db/$other-db/; s/= ca\./= $other./" ca-db/ca.cnf >"$other-db/ca.cnf"
	openssl ca -config "$other-db/ca.cnf" -gencrl -crldays 3650 -out "crl-$other.pem" 2>/dev/null
done
