/* The handshake that opens every spate TCP connection, RPC, data and blob
 * alike: a challenge-response with nonces from both sides. The server speaks
 * first with a challenge (magic, version, cluster id, its nonce); the client
 * answers with a hello (its nonce and an HMAC-SHA256 over both nonces keyed
 * with security.rpc.secret); the server checks it and replies with its own
 * HMAC, or a refusal with the reason. A captured handshake proves nothing on
 * another connection (the other side's nonce differs) and the secret never
 * travels. All three messages are HANDSHAKE_SIZE bytes, big-endian.
 * Stateless and thread-safe: a connection keeps its handshake_nonces. */
#ifndef SPATE_RPC_HANDSHAKE_H
#define SPATE_RPC_HANDSHAKE_H

#include <stdint.h>

#include <spate/error.h>

#define HANDSHAKE_SIZE           256
#define HANDSHAKE_VERSION        2
#define HANDSHAKE_NONCE_BYTES    32
#define HANDSHAKE_CLUSTER_ID_MAX 63
#define HANDSHAKE_REASON_MAX     119
#define HANDSHAKE_MAGIC_RPC      0x53505243u /* "SPRC" */
#define HANDSHAKE_MAGIC_DATA     0x53504454u /* "SPDT" */
#define HANDSHAKE_MAGIC_BLOB     0x5350424cu /* "SPBL" */

enum handshake_status {
    HANDSHAKE_OK = 0,
    HANDSHAKE_BAD_MAGIC,
    HANDSHAKE_BAD_VERSION,
    HANDSHAKE_BAD_CLUSTER,
    HANDSHAKE_BAD_SECRET,
    HANDSHAKE_BUSY, /* a connection cap: the server refuses before any hello */
};

/* What this side expects of its peers. */
struct handshake_params {
    uint32_t magic;         /* HANDSHAKE_MAGIC_RPC, _DATA or _BLOB */
    const char *cluster_id; /* at most HANDSHAKE_CLUSTER_ID_MAX bytes */
    const char *secret;     /* security.rpc.secret; NULL or "" for none */
};

/* One connection's nonces, kept by both sides between the messages. */
struct handshake_nonces {
    uint8_t server[HANDSHAKE_NONCE_BYTES];
    uint8_t client[HANDSHAKE_NONCE_BYTES];
};

/* Server, on accepting: a fresh nonce into n and the challenge to send.
 * status HANDSHAKE_BUSY (with a reason) refuses the connection at once. */
void handshake_encode_challenge(const struct handshake_params *p, struct handshake_nonces *n,
                                enum handshake_status status, const char *reason,
                                uint8_t out[HANDSHAKE_SIZE]);
/* Client: checks the server's challenge (magic, version, cluster, or its
 * refusal), keeps its nonce, draws its own, and writes the hello to send. */
int handshake_answer_challenge(const struct handshake_params *p, const uint8_t in[HANDSHAKE_SIZE],
                               struct handshake_nonces *n, uint8_t hello[HANDSHAKE_SIZE],
                               spate_error *err);
/* Server: checks a client's hello against the challenge it sent. On refusal
 * returns SPATE_EPROTO, sets err to the reason, and *status to what the reply
 * should carry. */
int handshake_check_hello(const struct handshake_params *p, struct handshake_nonces *n,
                          const uint8_t in[HANDSHAKE_SIZE], enum handshake_status *status,
                          spate_error *err);
/* Server: the reply (with the server's proof when status is OK); reason is
 * shown to the client on refusal (may be NULL). */
void handshake_encode_reply(const struct handshake_params *p, const struct handshake_nonces *n,
                            enum handshake_status status, const char *reason,
                            uint8_t out[HANDSHAKE_SIZE]);
/* Client: checks the server's reply; a refusal is SPATE_EPROTO with the
 * server's reason, and so is a server that cannot prove the secret. */
int handshake_check_reply(const struct handshake_params *p, const struct handshake_nonces *n,
                          const uint8_t in[HANDSHAKE_SIZE], spate_error *err);

/* What a magic names in messages: "RPC", "data", "blob". */
const char *handshake_kind(uint32_t magic);

#endif
