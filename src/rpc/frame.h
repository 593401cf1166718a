/* The RPC wire format: length-prefixed frames (the layout is below and in
 * src/rpc/README.md). Pure functions, no I/O, so that the fuzzer drives them
 * directly; thread-safe. */
#ifndef SPATE_RPC_FRAME_H
#define SPATE_RPC_FRAME_H

/* Layout (big-endian):
 *   0  u32  length of the rest of the frame (header + target + payload)
 *   4  u8   protocol version (FRAME_VERSION)
 *   5  u8   frame type (enum frame_type)
 *   6  u16  method id: protocol id << 8 | method number
 *   8  u64  call id (0 for tells)
 *   16 u8[16] fencing token (all zero: none)
 *   32 u8   target endpoint name length (1..255 for ASK/TELL, 0 for replies)
 *   33 ...  target name, then the payload (a protobuf message; for ERROR an
 *           i32 error code and the message text) */

#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

#include "core/id.h"

#define FRAME_VERSION      1
#define FRAME_PREFIX_BYTES 4
#define FRAME_HEADER_BYTES 33 /* prefix included, target excluded */
#define FRAME_TARGET_MAX   255
/* Error replies carry at most this much message text. */
#define FRAME_ERROR_TEXT_MAX 480

enum frame_type {
    FRAME_ASK = 1,   /* a call that wants a reply */
    FRAME_TELL = 2,  /* a one-way call */
    FRAME_REPLY = 3, /* the reply to an ask: the response message */
    FRAME_ERROR = 4, /* the reply to an ask: an error code and message */
};

/* A decoded frame; target and payload point into the decoded bytes. */
struct frame {
    uint8_t type;
    uint16_t method;
    uint64_t call_id;
    spate_id token;
    const char *target; /* not NUL-terminated */
    size_t target_len;
    const uint8_t *payload;
    size_t payload_len;
    size_t size; /* bytes the whole frame takes, prefix included */
};

/* Writes the header of a frame whose payload is payload_len bytes into out
 * (FRAME_HEADER_BYTES + target_len bytes). */
void frame_encode_header(uint8_t *out, enum frame_type type, uint16_t method, uint64_t call_id,
                         const spate_id *token, const char *target, size_t target_len,
                         size_t payload_len);
/* Fills in the length prefix once the payload size is known. */
void frame_set_length(uint8_t *frame_start, size_t total_size);

/* Decodes the frame at the start of buf[0..len). Returns 1 with *out filled
 * when a whole frame is there, 0 when more bytes are needed (after checking
 * what is there: an oversized length fails at once, before its bytes arrive),
 * or a negative SPATE_E* code with err saying what is wrong. */
int frame_decode(const uint8_t *buf, size_t len, size_t max_frame_bytes, struct frame *out,
                 spate_error *err);

/* ERROR payloads: encode returns the bytes written (at most
 * 4 + FRAME_ERROR_TEXT_MAX); decode fails with SPATE_EPROTO on a short payload
 * and copies the text, NUL-terminated, into msg. */
size_t frame_encode_error(uint8_t *out, int code, const char *msg);
int frame_decode_error(const uint8_t *payload, size_t len, int *code, char *msg, size_t msg_size,
                       spate_error *err);

const char *frame_type_name(int type);

#endif
