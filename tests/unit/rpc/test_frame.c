/* Unit tests of src/rpc/frame.c: encoding round trips and every way a frame
 * from the wire can be wrong. */
#include <criterion/criterion.h>
#include <string.h>

#include "rpc/frame.h"

#define MAX 4096

static size_t
make(uint8_t *buf, int type, const char *target, const char *payload)
{
    spate_id tok;
    size_t tlen = strlen(target), plen = strlen(payload);

    memset(tok.bytes, 0xab, sizeof tok.bytes);
    frame_encode_header(buf, type, 0x6401, 77, &tok, target, tlen, plen);
    memcpy(buf + FRAME_HEADER_BYTES + tlen, payload, plen);
    return FRAME_HEADER_BYTES + tlen + plen;
}

Test(frame, round_trip)
{
    uint8_t buf[256];
    struct frame fr;
    size_t n = make(buf, FRAME_ASK, "resourcemanager", "payload");

    cr_assert_eq(frame_decode(buf, n, MAX, &fr, NULL), 1);
    cr_assert_eq(fr.type, FRAME_ASK);
    cr_assert_eq(fr.method, 0x6401);
    cr_assert_eq(fr.call_id, 77);
    cr_assert_eq(fr.token.bytes[5], 0xab);
    cr_assert_eq(fr.target_len, 15);
    cr_assert_eq(memcmp(fr.target, "resourcemanager", 15), 0);
    cr_assert_eq(fr.payload_len, 7);
    cr_assert_eq(memcmp(fr.payload, "payload", 7), 0);
    cr_assert_eq(fr.size, n);
}

Test(frame, partial_input_needs_more)
{
    uint8_t buf[256];
    struct frame fr;
    size_t n = make(buf, FRAME_TELL, "x", "abc");

    for (size_t i = 0; i < n; i++)
        cr_assert_eq(frame_decode(buf, i, MAX, &fr, NULL), 0, "prefix of %zu bytes", i);
    cr_assert_eq(frame_decode(buf, n, MAX, &fr, NULL), 1);
}

Test(frame, oversized_length_fails_before_the_bytes_come)
{
    uint8_t buf[8] = { 0xff, 0xff, 0xff, 0xf0 };
    spate_error err = { 0 };
    struct frame fr;

    cr_assert_eq(frame_decode(buf, 4, MAX, &fr, &err), SPATE_EMSGSIZE);
    cr_assert(strstr(err.message, "rpc.max-frame-size") != NULL, "%s", err.message);
}

Test(frame, malformed_frames)
{
    uint8_t buf[256];
    spate_error err = { 0 };
    struct frame fr;
    size_t n;

    /* shorter than a header */
    memset(buf, 0, sizeof buf);
    buf[3] = 5;
    cr_assert_eq(frame_decode(buf, 9, MAX, &fr, &err), SPATE_EPROTO);
    /* bad version */
    n = make(buf, FRAME_ASK, "ep", "");
    buf[4] = 9;
    cr_assert_eq(frame_decode(buf, n, MAX, &fr, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "version 9") != NULL, "%s", err.message);
    /* bad type, noticed with only 6 bytes in */
    n = make(buf, FRAME_ASK, "ep", "");
    buf[5] = 42;
    cr_assert_eq(frame_decode(buf, 6, MAX, &fr, &err), SPATE_EPROTO);
    /* target runs past the end */
    n = make(buf, FRAME_ASK, "ep", "");
    buf[32] = 200;
    cr_assert_eq(frame_decode(buf, n, MAX, &fr, &err), SPATE_EPROTO);
    /* an ask without a target */
    n = make(buf, FRAME_ASK, "", "x");
    cr_assert_eq(frame_decode(buf, n, MAX, &fr, &err), SPATE_EPROTO);
    /* a forbidden byte in the target */
    n = make(buf, FRAME_TELL, "a/b", "");
    cr_assert_eq(frame_decode(buf, n, MAX, &fr, &err), SPATE_EPROTO);
    /* replies have no target */
    n = make(buf, FRAME_REPLY, "", "x");
    cr_assert_eq(frame_decode(buf, n, MAX, &fr, &err), 1);
}

Test(frame, error_payloads)
{
    uint8_t buf[600];
    char msg[64];
    int code;
    size_t n = frame_encode_error(buf, SPATE_EFENCED, "token rejected");

    cr_assert_eq(frame_decode_error(buf, n, &code, msg, sizeof msg, NULL), 0);
    cr_assert_eq(code, SPATE_EFENCED);
    cr_assert_str_eq(msg, "token rejected");
    cr_assert_eq(frame_decode_error(buf, 3, &code, msg, sizeof msg, NULL), SPATE_EPROTO);
    /* a "success" code from the wire is still an error */
    n = frame_encode_error(buf, 5, "odd\n");
    cr_assert_eq(frame_decode_error(buf, n, &code, msg, sizeof msg, NULL), 0);
    cr_assert_eq(code, SPATE_EREMOTE);
    cr_assert_str_eq(msg, "odd?");
}
