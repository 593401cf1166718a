/* Connection handshake (handshake.h). Layout of the three messages:
 *
 *   0   u32  magic          4   u16  version      6  u8 status   7  u8 flags
 *   8   char cluster_id[64] (NUL-padded)
 *   72  u8   nonce[32]      challenge: the server's; hello: the client's
 *   104 u8   proof[32]      hello:  HMAC-SHA256(secret, "spate-hs2 client" | magic |
 *                                   cluster_id[64] | server nonce | client nonce)
 *                           reply:  the same with "spate-hs2 server"
 *   136 char reason[120]    (refusals, NUL-padded)
 *
 * The labels keep a client's proof from serving as a server's (reflection);
 * the nonces keep a proof from serving on another connection (replay). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "core/util.h"
#include "rpc/handshake.h"

#define HS_FLAG_PROOF  0x01
#define HS_OFF_CLUSTER 8
#define HS_OFF_NONCE   72
#define HS_OFF_PROOF   104
#define HS_OFF_REASON  136
#define HS_PROOF_BYTES 32

_Static_assert(HS_OFF_NONCE + HANDSHAKE_NONCE_BYTES == HS_OFF_PROOF, "handshake layout");
_Static_assert(HS_OFF_REASON + HANDSHAKE_REASON_MAX + 1 == HANDSHAKE_SIZE, "handshake layout");

static int
hs_has_secret(const struct handshake_params *p)
{
    return p->secret != NULL && p->secret[0] != '\0';
}

const char *
handshake_kind(uint32_t magic)
{
    switch (magic) {
    case HANDSHAKE_MAGIC_RPC:
        return "RPC";
    case HANDSHAKE_MAGIC_DATA:
        return "data";
    case HANDSHAKE_MAGIC_BLOB:
        return "blob";
    default:
        return "unknown";
    }
}

/* The proof of one side over this connection's nonces. */
static void
hs_proof(const struct handshake_params *p, const char *label, const struct handshake_nonces *n,
         uint8_t out[HS_PROOF_BYTES])
{
    uint8_t msg[16 + 4 + 64 + 2 * HANDSHAKE_NONCE_BYTES];
    unsigned int len = 0;
    size_t off = 0;

    memset(msg, 0, sizeof msg);
    memcpy(msg, label, strlen(label)); /* 16 bytes: "spate-hs2 client" */
    off = 16;
    msg[off++] = (uint8_t)(p->magic >> 24);
    msg[off++] = (uint8_t)(p->magic >> 16);
    msg[off++] = (uint8_t)(p->magic >> 8);
    msg[off++] = (uint8_t)p->magic;
    memcpy(msg + off, p->cluster_id, strlen(p->cluster_id));
    off += 64;
    memcpy(msg + off, n->server, HANDSHAKE_NONCE_BYTES);
    off += HANDSHAKE_NONCE_BYTES;
    memcpy(msg + off, n->client, HANDSHAKE_NONCE_BYTES);
    SPATE_ASSERT(
        HMAC(EVP_sha256(), p->secret, (int)strlen(p->secret), msg, sizeof msg, out, &len) != NULL &&
        len == HS_PROOF_BYTES);
}

static void
hs_nonce(uint8_t out[HANDSHAKE_NONCE_BYTES])
{
    SPATE_ASSERT(RAND_bytes(out, HANDSHAKE_NONCE_BYTES) == 1);
}

static void
hs_encode(const struct handshake_params *p, enum handshake_status status, const char *reason,
          uint8_t out[HANDSHAKE_SIZE])
{
    size_t len = strlen(p->cluster_id);

    SPATE_ASSERT(len <= HANDSHAKE_CLUSTER_ID_MAX);
    memset(out, 0, HANDSHAKE_SIZE);
    out[0] = (uint8_t)(p->magic >> 24);
    out[1] = (uint8_t)(p->magic >> 16);
    out[2] = (uint8_t)(p->magic >> 8);
    out[3] = (uint8_t)p->magic;
    out[4] = (uint8_t)(HANDSHAKE_VERSION >> 8);
    out[5] = (uint8_t)HANDSHAKE_VERSION;
    out[6] = (uint8_t)status;
    memcpy(out + HS_OFF_CLUSTER, p->cluster_id, len);
    if (reason != NULL)
        snprintf((char *)out + HS_OFF_REASON, HANDSHAKE_REASON_MAX + 1, "%s", reason);
}

/* A refusal's reason, terminated. */
static const char *
hs_reason(const uint8_t in[HANDSHAKE_SIZE], char out[HANDSHAKE_REASON_MAX + 1])
{
    memcpy(out, in + HS_OFF_REASON, HANDSHAKE_REASON_MAX);
    out[HANDSHAKE_REASON_MAX] = '\0';
    return out[0] ? out : "no reason given";
}

/* Checks magic, version and cluster id of a peer's message. */
static int
hs_check_header(const struct handshake_params *p, const uint8_t in[HANDSHAKE_SIZE],
                enum handshake_status *status, spate_error *err)
{
    uint32_t magic = (uint32_t)in[0] << 24 | (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 | in[3];
    unsigned version = (unsigned)in[4] << 8 | in[5];
    const char *cluster = (const char *)in + HS_OFF_CLUSTER;

    if (magic != p->magic) {
        *status = HANDSHAKE_BAD_MAGIC;
        return spate_error_set(err, SPATE_EPROTO,
                               "bad handshake magic 0x%08x (expected 0x%08x): not a spate %s "
                               "connection",
                               magic, p->magic, handshake_kind(p->magic));
    }
    if (version != HANDSHAKE_VERSION) {
        *status = HANDSHAKE_BAD_VERSION;
        return spate_error_set(err, SPATE_EPROTO,
                               "protocol version %u is not supported (this side speaks %u)",
                               version, HANDSHAKE_VERSION);
    }
    if (memchr(cluster, '\0', 64) == NULL || strcmp(cluster, p->cluster_id) != 0) {
        *status = HANDSHAKE_BAD_CLUSTER;
        return spate_error_set(err, SPATE_EPROTO, "cluster id '%.*s' is not this cluster's '%s'",
                               (int)strnlen(cluster, 64), cluster, p->cluster_id);
    }
    *status = HANDSHAKE_OK;
    return 0;
}

/* Checks the peer's proof (when this side has a secret; a peer with a proof
 * where this side has none is refused too: the two sides disagree). */
static int
hs_check_proof(const struct handshake_params *p, const char *label,
               const struct handshake_nonces *n, const uint8_t in[HANDSHAKE_SIZE],
               enum handshake_status *status, spate_error *err)
{
    uint8_t expected[HS_PROOF_BYTES];
    bool has_proof = (in[7] & HS_FLAG_PROOF) != 0;

    if (!hs_has_secret(p)) {
        if (!has_proof)
            return 0;
        *status = HANDSHAKE_BAD_SECRET;
        return spate_error_set(err, SPATE_EPROTO,
                               "peer presented a proof of a shared secret, but "
                               "security.rpc.secret is not set here");
    }
    if (!has_proof) {
        *status = HANDSHAKE_BAD_SECRET;
        return spate_error_set(err, SPATE_EPROTO,
                               "peer presented no proof of the shared secret "
                               "(security.rpc.secret)");
    }
    hs_proof(p, label, n, expected);
    if (CRYPTO_memcmp(in + HS_OFF_PROOF, expected, HS_PROOF_BYTES) != 0) {
        *status = HANDSHAKE_BAD_SECRET;
        return spate_error_set(err, SPATE_EPROTO,
                               "peer's proof does not match security.rpc.secret (a wrong "
                               "secret, or a replayed handshake)");
    }
    return 0;
}

void
handshake_encode_challenge(const struct handshake_params *p, struct handshake_nonces *n,
                           enum handshake_status status, const char *reason,
                           uint8_t out[HANDSHAKE_SIZE])
{
    hs_encode(p, status, reason, out);
    hs_nonce(n->server);
    memset(n->client, 0, sizeof n->client);
    memcpy(out + HS_OFF_NONCE, n->server, HANDSHAKE_NONCE_BYTES);
}

int
handshake_answer_challenge(const struct handshake_params *p, const uint8_t in[HANDSHAKE_SIZE],
                           struct handshake_nonces *n, uint8_t hello[HANDSHAKE_SIZE],
                           spate_error *err)
{
    enum handshake_status status;
    char reason[HANDSHAKE_REASON_MAX + 1];

    if (hs_check_header(p, in, &status, err) != 0)
        return spate_error_wrap(err, "server's handshake challenge");
    if (in[6] != HANDSHAKE_OK)
        return spate_error_set(err, SPATE_EPROTO, "connection refused by the server: %s",
                               hs_reason(in, reason));
    memcpy(n->server, in + HS_OFF_NONCE, HANDSHAKE_NONCE_BYTES);
    hs_nonce(n->client);
    hs_encode(p, HANDSHAKE_OK, NULL, hello);
    memcpy(hello + HS_OFF_NONCE, n->client, HANDSHAKE_NONCE_BYTES);
    if (hs_has_secret(p)) {
        hello[7] = HS_FLAG_PROOF;
        hs_proof(p, "spate-hs2 client", n, hello + HS_OFF_PROOF);
    }
    return 0;
}

int
handshake_check_hello(const struct handshake_params *p, struct handshake_nonces *n,
                      const uint8_t in[HANDSHAKE_SIZE], enum handshake_status *status,
                      spate_error *err)
{
    int rc = hs_check_header(p, in, status, err);

    if (rc != 0)
        return rc;
    memcpy(n->client, in + HS_OFF_NONCE, HANDSHAKE_NONCE_BYTES);
    return hs_check_proof(p, "spate-hs2 client", n, in, status, err);
}

void
handshake_encode_reply(const struct handshake_params *p, const struct handshake_nonces *n,
                       enum handshake_status status, const char *reason,
                       uint8_t out[HANDSHAKE_SIZE])
{
    hs_encode(p, status, reason, out);
    if (status == HANDSHAKE_OK && hs_has_secret(p)) {
        out[7] = HS_FLAG_PROOF;
        hs_proof(p, "spate-hs2 server", n, out + HS_OFF_PROOF);
    }
}

int
handshake_check_reply(const struct handshake_params *p, const struct handshake_nonces *n,
                      const uint8_t in[HANDSHAKE_SIZE], spate_error *err)
{
    enum handshake_status status;
    char reason[HANDSHAKE_REASON_MAX + 1];

    /* A refusal says why; its other fields need not match. */
    if (in[6] != HANDSHAKE_OK)
        return spate_error_set(err, SPATE_EPROTO, "handshake refused by the server: %s",
                               hs_reason(in, reason));
    if (hs_check_header(p, in, &status, err) != 0 ||
        hs_check_proof(p, "spate-hs2 server", n, in, &status, err) != 0)
        return spate_error_wrap(err, "server's handshake reply");
    return 0;
}
