/* Frame encoding and decoding (frame.h). Everything from the wire is checked
 * here before any other code sees it. */
#include <string.h>

#include "core/util.h"
#include "rpc/frame.h"

_Static_assert(FRAME_HEADER_BYTES == 4 + 1 + 1 + 2 + 8 + 16 + 1, "frame header layout");

static void
put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void
put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void
put_u64(uint8_t *p, uint64_t v)
{
    put_u32(p, (uint32_t)(v >> 32));
    put_u32(p + 4, (uint32_t)v);
}

static uint16_t
get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t
get_u64(const uint8_t *p)
{
    return (uint64_t)get_u32(p) << 32 | get_u32(p + 4);
}

void
frame_encode_header(uint8_t *out, enum frame_type type, uint16_t method, uint64_t call_id,
                    const spate_id *token, const char *target, size_t target_len,
                    size_t payload_len)
{
    SPATE_ASSERT(target_len <= FRAME_TARGET_MAX);
    frame_set_length(out, FRAME_HEADER_BYTES + target_len + payload_len);
    out[4] = FRAME_VERSION;
    out[5] = (uint8_t)type;
    put_u16(out + 6, method);
    put_u64(out + 8, call_id);
    if (token != NULL)
        memcpy(out + 16, token->bytes, ID_BYTES);
    else
        memset(out + 16, 0, ID_BYTES);
    out[32] = (uint8_t)target_len;
    if (target_len > 0)
        memcpy(out + FRAME_HEADER_BYTES, target, target_len);
}

void
frame_set_length(uint8_t *frame_start, size_t total_size)
{
    SPATE_ASSERT(total_size >= FRAME_PREFIX_BYTES && total_size - FRAME_PREFIX_BYTES <= UINT32_MAX);
    put_u32(frame_start, (uint32_t)(total_size - FRAME_PREFIX_BYTES));
}

const char *
frame_type_name(int type)
{
    switch (type) {
    case FRAME_ASK:
        return "ask";
    case FRAME_TELL:
        return "tell";
    case FRAME_REPLY:
        return "reply";
    case FRAME_ERROR:
        return "error";
    }
    return "unknown";
}

int
frame_decode(const uint8_t *buf, size_t len, size_t max_frame_bytes, struct frame *out,
             spate_error *err)
{
    uint64_t body, total;
    size_t tlen;

    if (len < FRAME_PREFIX_BYTES)
        return 0;
    body = get_u32(buf);
    total = body + FRAME_PREFIX_BYTES;
    if (total > max_frame_bytes)
        return spate_error_set(err, SPATE_EMSGSIZE,
                               "frame of %llu bytes exceeds rpc.max-frame-size (%zu bytes)",
                               (unsigned long long)total, max_frame_bytes);
    if (total < FRAME_HEADER_BYTES)
        return spate_error_set(err, SPATE_EPROTO, "frame length %llu is shorter than a header",
                               (unsigned long long)total);
    /* Check the fixed header as soon as it is there, so that garbage fails
     * without waiting for the bytes its bogus length promises. */
    if (len >= 6) {
        if (buf[4] != FRAME_VERSION)
            return spate_error_set(err, SPATE_EPROTO,
                                   "frame protocol version %u is not supported (expected %u)",
                                   buf[4], FRAME_VERSION);
        if (buf[5] < FRAME_ASK || buf[5] > FRAME_ERROR)
            return spate_error_set(err, SPATE_EPROTO, "unknown frame type %u", buf[5]);
    }
    if (len < total)
        return 0;
    tlen = buf[32];
    if (FRAME_HEADER_BYTES + tlen > total)
        return spate_error_set(err, SPATE_EPROTO,
                               "frame's target name (%zu bytes) runs past its end (%llu bytes)",
                               tlen, (unsigned long long)total);
    if ((buf[5] == FRAME_ASK || buf[5] == FRAME_TELL) && tlen == 0)
        return spate_error_set(err, SPATE_EPROTO, "%s frame names no target endpoint",
                               frame_type_name(buf[5]));
    for (size_t i = 0; i < tlen; i++) {
        uint8_t c = buf[FRAME_HEADER_BYTES + i];

        if (c <= ' ' || c >= 0x7f || c == '/')
            return spate_error_set(err, SPATE_EPROTO,
                                   "target endpoint name has a forbidden byte 0x%02x", c);
    }
    out->type = buf[5];
    out->method = get_u16(buf + 6);
    out->call_id = get_u64(buf + 8);
    memcpy(out->token.bytes, buf + 16, ID_BYTES);
    out->target = (const char *)buf + FRAME_HEADER_BYTES;
    out->target_len = tlen;
    out->payload = buf + FRAME_HEADER_BYTES + tlen;
    out->payload_len = (size_t)total - FRAME_HEADER_BYTES - tlen;
    out->size = (size_t)total;
    return 1;
}

size_t
frame_encode_error(uint8_t *out, int code, const char *msg)
{
    size_t n = msg ? strnlen(msg, FRAME_ERROR_TEXT_MAX) : 0;

    put_u32(out, (uint32_t)code);
    if (n > 0)
        memcpy(out + 4, msg, n);
    return 4 + n;
}

int
frame_decode_error(const uint8_t *payload, size_t len, int *code, char *msg, size_t msg_size,
                   spate_error *err)
{
    size_t n;

    if (len < 4)
        return spate_error_set(err, SPATE_EPROTO, "error reply of %zu bytes has no error code",
                               len);
    *code = (int)get_u32(payload);
    /* Replies must not pretend success: a remote error is always an error. */
    if (*code >= 0)
        *code = SPATE_EREMOTE;
    n = len - 4;
    if (n > FRAME_ERROR_TEXT_MAX)
        n = FRAME_ERROR_TEXT_MAX;
    if (n >= msg_size)
        n = msg_size - 1;
    memcpy(msg, payload + 4, n);
    msg[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)msg[i] < ' ')
            msg[i] = '?';
    return 0;
}
