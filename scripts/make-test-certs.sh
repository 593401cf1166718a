#!/bin/sh
# A test CA and certificates for TLS (security.ssl.*), made with the openssl
# command line into DIR (default ./certs):
#   ca.pem                 the CA's certificate: the truststore
#   node.pem, node.key     a certificate the CA signed (localhost, 127.0.0.1)
#   expired.pem/.key       one the CA signed that expired in 2020
#   other-ca.pem           another CA
#   other.pem, other.key   a certificate of the other CA
# For tests and trying TLS out; a real cluster's certificates come from its
# own CA. Keys are EC P-256, unencrypted, mode 0600.
set -eu

dir=${1:-certs}
mkdir -p "$dir"
cd "$dir"
umask 077
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ca() { # name subject
    openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$1.key" -out "$1.pem" -days 3650 -subj "$2" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        2>/dev/null
}

csr() { # name subject
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$1.key" -out "$work/$1.csr" -subj "$2" 2>/dev/null
}

cat >"$work/ext" <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=DNS:localhost,IP:127.0.0.1
EXT

sign() { # name ca
    openssl x509 -req -in "$work/$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial \
        -CAserial "$work/$2.srl" -out "$1.pem" -days 825 -extfile "$work/ext" 2>/dev/null
}

ca ca "/CN=spate test CA"
ca other-ca "/CN=another CA"
csr node "/CN=spate node"
sign node ca
csr other "/CN=node of another CA"
sign other other-ca

# Expired: `openssl ca` takes explicit dates.
csr expired "/CN=spate expired node"
mkdir -p "$work/db"
: >"$work/db/index"
echo 1000 >"$work/db/serial"
cat >"$work/ca.cnf" <<CNF
[ca]
default_ca = test
[test]
database = $work/db/index
serial = $work/db/serial
new_certs_dir = $work/db
default_md = sha256
policy = any
copy_extensions = none
[any]
commonName = supplied
[ext]
basicConstraints=CA:FALSE
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=DNS:localhost,IP:127.0.0.1
CNF
openssl ca -batch -config "$work/ca.cnf" -cert ca.pem -keyfile ca.key -in "$work/expired.csr" \
    -out expired.pem -startdate 20200101000000Z -enddate 20200102000000Z -extensions ext \
    -notext 2>/dev/null
rm -f ca.key other-ca.key
chmod 600 ./*.key
chmod 644 ./*.pem
echo "test certificates in $(pwd)"
