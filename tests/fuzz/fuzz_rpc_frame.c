/* libFuzzer target: the RPC wire decoding that faces the network — the
 * handshake checks, frame decoding over a byte stream, error payloads, and
 * protobuf unpacking into a per-frame arena. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto/rpc.pb-c.h"
#include "rpc/arena.h"
#include "rpc/frame.h"
#include "rpc/handshake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct handshake_params plain = { HANDSHAKE_MAGIC_RPC, "spate", NULL };
    static const struct handshake_params secret = { HANDSHAKE_MAGIC_RPC, "spate", "s3cret" };
    enum handshake_status status;
    struct handshake_nonces n;
    uint8_t hello[HANDSHAKE_SIZE];
    size_t off = 0;

    /* The authentication paths: a challenge answered, a hello and a reply
     * checked, with and without a secret (the HMAC proofs). */
    memset(&n, 0x11, sizeof n);
    if (size >= HANDSHAKE_SIZE) {
        handshake_answer_challenge(&plain, data, &n, hello, NULL);
        handshake_answer_challenge(&secret, data, &n, hello, NULL);
        handshake_check_hello(&plain, &n, data, &status, NULL);
        handshake_check_hello(&secret, &n, data, &status, NULL);
        handshake_check_reply(&plain, &n, data, NULL);
        handshake_check_reply(&secret, &n, data, NULL);
        /* The rest is a frame stream, as on a connection after its hello. */
        if (data[0] == 'S')
            off = HANDSHAKE_SIZE;
    }
    while (off < size) {
        struct frame fr;
        int rc = frame_decode(data + off, size - off, 1 << 16, &fr, NULL);
        char msg[FRAME_ERROR_TEXT_MAX + 1];
        char first[256];
        struct arena a;
        int code;

        if (rc <= 0)
            break;
        arena_init(&a, first, sizeof first);
        if (fr.type == FRAME_ERROR) {
            frame_decode_error(fr.payload, fr.payload_len, &code, msg, sizeof msg, NULL);
        } else if (fr.type == FRAME_REPLY) {
            arena_unpack(&a, &rpcmsg__heartbeat_response__descriptor, fr.payload, fr.payload_len);
        } else {
            arena_unpack(&a, &rpcmsg__heartbeat_request__descriptor, fr.payload, fr.payload_len);
        }
        arena_release(&a);
        off += fr.size;
    }
    return 0;
}
