/* Connection handshake (handshake.h). Layout of both messages:
 *
 *   0   u32  magic          4   u16  version      6  u8 status   7  u8 flags
 *   8   char cluster_id[64] (NUL-padded)
 *   72  u8   proof[32]      SHA-256("spate-handshake-1" NUL, cluster_id[64], secret)
 *   104 char reason[152]    (reply only, NUL-padded)
 */
#include <stdio.h>
#include <string.h>

#include "core/sha256.h"
#include "core/util.h"
#include "rpc/handshake.h"

#define HS_FLAG_PROOF  0x01
#define HS_OFF_CLUSTER 8
#define HS_OFF_PROOF   72
#define HS_OFF_REASON  104

_Static_assert(HS_OFF_REASON + 152 == HANDSHAKE_SIZE, "handshake layout");

static int
hs_has_secret(const struct handshake_params *p)
{
    return p->secret != NULL && p->secret[0] != '\0';
}

static void
hs_proof(const struct handshake_params *p, const uint8_t cluster[64], uint8_t out[SHA256_BYTES])
{
    static const char domain[] = "spate-handshake-1";
    struct sha256_ctx ctx;

    sha256_init(&ctx);
    sha256_update(&ctx, domain, sizeof domain);
    sha256_update(&ctx, cluster, 64);
    sha256_update(&ctx, p->secret, strlen(p->secret));
    sha256_final(&ctx, out);
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
    if (hs_has_secret(p)) {
        out[7] = HS_FLAG_PROOF;
        hs_proof(p, out + HS_OFF_CLUSTER, out + HS_OFF_PROOF);
    }
    if (reason != NULL)
        snprintf((char *)out + HS_OFF_REASON, 152, "%s", reason);
}

/* Checks magic, version, cluster id and secret proof of a peer's message. */
static int
hs_check(const struct handshake_params *p, const uint8_t in[HANDSHAKE_SIZE],
         enum handshake_status *status, spate_error *err)
{
    uint32_t magic = (uint32_t)in[0] << 24 | (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 | in[3];
    unsigned version = (unsigned)in[4] << 8 | in[5];
    const char *cluster = (const char *)in + HS_OFF_CLUSTER;
    uint8_t expected[SHA256_BYTES];
    char mine[64] = { 0 };

    if (magic != p->magic) {
        *status = HANDSHAKE_BAD_MAGIC;
        return spate_error_set(err, SPATE_EPROTO,
                               "bad handshake magic 0x%08x (expected 0x%08x): not a spate %s "
                               "connection",
                               magic, p->magic, p->magic == HANDSHAKE_MAGIC_RPC ? "RPC" : "data");
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
    if (hs_has_secret(p)) {
        memcpy(mine, p->cluster_id, strlen(p->cluster_id));
        hs_proof(p, (const uint8_t *)mine, expected);
        if (!(in[7] & HS_FLAG_PROOF) || !sha256_equal(in + HS_OFF_PROOF, expected)) {
            *status = HANDSHAKE_BAD_SECRET;
            return spate_error_set(err, SPATE_EPROTO, "%s",
                                   (in[7] & HS_FLAG_PROOF)
                                       ? "shared secret does not match security.rpc.secret"
                                       : "peer presented no shared secret");
        }
    }
    *status = HANDSHAKE_OK;
    return 0;
}

void
handshake_encode_hello(const struct handshake_params *p, uint8_t out[HANDSHAKE_SIZE])
{
    hs_encode(p, HANDSHAKE_OK, NULL, out);
}

int
handshake_check_hello(const struct handshake_params *p, const uint8_t in[HANDSHAKE_SIZE],
                      enum handshake_status *status, spate_error *err)
{
    return hs_check(p, in, status, err);
}

void
handshake_encode_reply(const struct handshake_params *p, enum handshake_status status,
                       const char *reason, uint8_t out[HANDSHAKE_SIZE])
{
    hs_encode(p, status, reason, out);
}

int
handshake_check_reply(const struct handshake_params *p, const uint8_t in[HANDSHAKE_SIZE],
                      spate_error *err)
{
    enum handshake_status status;
    int rc;

    /* A refusal says why; its other fields need not match. */
    if (in[6] != HANDSHAKE_OK) {
        char reason[153];

        memcpy(reason, in + HS_OFF_REASON, 152);
        reason[152] = '\0';
        return spate_error_set(err, SPATE_EPROTO, "handshake refused by the server: %s",
                               reason[0] ? reason : "no reason given");
    }
    rc = hs_check(p, in, &status, err);
    if (rc != 0)
        spate_error_wrap(err, "server's handshake reply");
    return rc;
}
