/* The handshake that opens every spate TCP connection, RPC and data alike:
 * the client sends a hello (magic, protocol version, cluster id, and a proof
 * of the shared secret when one is configured); the server checks it and
 * answers with a reply that accepts or refuses, with the reason. Both are
 * HANDSHAKE_SIZE bytes, big-endian. Stateless and thread-safe. */
#ifndef SPATE_RPC_HANDSHAKE_H
#define SPATE_RPC_HANDSHAKE_H

#include <stdint.h>

#include <spate/error.h>

#define HANDSHAKE_SIZE           256
#define HANDSHAKE_VERSION        1
#define HANDSHAKE_CLUSTER_ID_MAX 63
#define HANDSHAKE_MAGIC_RPC      0x53505243u /* "SPRC" */
#define HANDSHAKE_MAGIC_DATA     0x53504454u /* "SPDT" */

enum handshake_status {
    HANDSHAKE_OK = 0,
    HANDSHAKE_BAD_MAGIC,
    HANDSHAKE_BAD_VERSION,
    HANDSHAKE_BAD_CLUSTER,
    HANDSHAKE_BAD_SECRET,
};

/* What this side expects of its peers. */
struct handshake_params {
    uint32_t magic;         /* HANDSHAKE_MAGIC_RPC or _DATA */
    const char *cluster_id; /* at most HANDSHAKE_CLUSTER_ID_MAX bytes */
    const char *secret;     /* security.rpc.secret; NULL or "" for none */
};

/* Client: the hello to send. */
void handshake_encode_hello(const struct handshake_params *p, uint8_t out[HANDSHAKE_SIZE]);
/* Server: checks a client's hello. On refusal returns SPATE_EPROTO, sets err
 * to the reason, and *status to what the reply should carry. */
int handshake_check_hello(const struct handshake_params *p, const uint8_t in[HANDSHAKE_SIZE],
                          enum handshake_status *status, spate_error *err);
/* Server: the reply; reason is shown to the client on refusal (may be NULL). */
void handshake_encode_reply(const struct handshake_params *p, enum handshake_status status,
                            const char *reason, uint8_t out[HANDSHAKE_SIZE]);
/* Client: checks the server's reply; a refusal is SPATE_EPROTO with the
 * server's reason. */
int handshake_check_reply(const struct handshake_params *p, const uint8_t in[HANDSHAKE_SIZE],
                          spate_error *err);

#endif
