#!/usr/bin/env bash
# dev-certs.sh DIR [NODES [CLIENT...]] - development certificates for a local cluster:
#   DIR/ca.pem            the cluster CA (certificate only)
#   DIR/ca.key            its key (keep it away from the nodes)
#   DIR/nodeN.pem         node N's certificate and key in one PEM file
#                         (OU=node, CN and SAN "nodeN", plus localhost / 127.0.0.1)
#   DIR/client.pem        a client certificate and key (OU=client, CN "client")
#   DIR/client.crt, .key  the same, split (for tools that want two files)
#   DIR/CLIENT.pem        for each CLIENT named (e.g. sensor-1 ops-1): a client
#                         certificate and key with CN CLIENT (OU=client), the
#                         identity an [acl] rule matches (docs/security.md);
#                         the shipped [acl] refuses CN "client", which only
#                         `make run`'s cluster, with no [acl], lets do anything
# ECDSA P-256, valid 825 days, made with the openssl CLI. Existing files are
# kept, so a running cluster's certificates survive `make run` again.
# These are for development on loopback only: the CA key sits next to them.
set -euo pipefail
dir=$1 nodes=${2:-5}
shift $(($# < 2 ? $# : 2))
for name in "$@"; do
	# a CN the [acl] can match, a file name, at most 31 bytes (docs/security.md)
	if ! [[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,30}$ ]] || [[ $name =~ ^(node[0-9]+|ca)$ ]]; then
		echo "dev-certs.sh: bad client name '$name' (letters, digits, . _ -, at most 31; not nodeN or ca)" >&2
		exit 64
	fi
done
mkdir -p "$dir"
cd "$dir"
umask 077
days=825
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
if [ ! -f ca.pem ] || [ ! -f ca.key ]; then
	key ca.key
	openssl req -x509 -new -key ca.key -sha256 -days $days -subj "/CN=edgelock dev CA" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem 2>/dev/null
fi
# sign NAME SAN EKU OU (OU=node or OU=client: the role issue 12 proves)
sign() {
	local name=$1 san=$2 eku=$3 ou=$4
	[ -f "$name.pem" ] && return 0
	key "$name.key"
	openssl req -new -key "$name.key" -subj "/OU=$ou/CN=$name" -out "$name.csr" 2>/dev/null
	printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=%s\n%s\n' \
		"$eku" "$san" >"$name.ext"
	openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 \
		-days $days -extfile "$name.ext" -out "$name.crt" 2>/dev/null
	cat "$name.crt" "$name.key" >"$name.pem"
	rm -f "$name.csr" "$name.ext"
}
for i in $(seq 1 "$nodes"); do
	sign "node$i" "subjectAltName=DNS:node$i,DNS:localhost,IP:127.0.0.1" "serverAuth,clientAuth" node
done
sign client "subjectAltName=DNS:client" "clientAuth" client
for name in "$@"; do
	sign "$name" "subjectAltName=DNS:$name" "clientAuth" client
	chmod 600 "$name.pem"
done
# keys 0600 even in a set made by other means: edgelockd refuses a
# cert_key_file every user may read
chmod 600 ./*.key ./node*.pem client.pem
chmod 644 ca.pem
extra=""
for name in "$@"; do extra+=", $name.pem"; done
echo "certificates in $dir: ca.pem, node1..node$nodes.pem, client.pem$extra"
