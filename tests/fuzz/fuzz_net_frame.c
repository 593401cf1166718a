/* libFuzzer target for what the data port reads from the network: frame
 * headers (both sides' decoders), the handshake check, and the record
 * deserializer over the bytes cut into buffers at places the input chooses.
 * None may crash, leak or read out of bounds, whatever the bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "network/protocol.h"
#include "network/record_reader.h"
#include "rpc/handshake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_recycle(struct net_buffer *buf)
{
    free(buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct handshake_params hs = { HANDSHAKE_MAGIC_DATA, "/default", "s" };
    struct record_deserializer d;
    struct net_frame f;
    enum handshake_status st;
    struct handshake_nonces n;
    uint8_t hello[HANDSHAKE_SIZE];
    spate_error err;
    size_t off = 0;

    for (size_t i = 0; i + NET_FRAME_HEADER_SIZE <= size; i += NET_FRAME_HEADER_SIZE) {
        net_frame_decode(data + i, 0, 32768, &f, &err);
        net_frame_decode(data + i, 1, 32768, &f, &err);
    }
    if (size >= HANDSHAKE_SIZE) {
        memset(&n, 0x22, sizeof n);
        handshake_answer_challenge(&hs, data, &n, hello, &err);
        handshake_check_hello(&hs, &n, data, &st, &err);
        handshake_check_reply(&hs, &n, data, &err);
    }
    /* First byte: how long each buffer is (1..256 bytes), then the stream. */
    if (size < 1)
        return 0;
    record_deserializer_init(&d);
    for (size_t step = (size_t)data[0] + 1, pos = 1; pos < size; pos += step) {
        size_t len_buf = pos + step <= size ? step : size - pos;
        struct net_buffer *buf = malloc(sizeof *buf + len_buf);
        const uint8_t *rec;
        uint32_t len;
        int rc;

        memset(buf, 0, sizeof *buf);
        buf->data = (uint8_t *)(buf + 1);
        memcpy(buf->data, data + pos, len_buf);
        buf->size = buf->capacity = (uint32_t)len_buf;
        buf->recycler = fuzz_recycle;
        record_deserializer_set_buffer(&d, buf);
        while ((rc = record_deserializer_next(&d, &rec, &len, &err)) == 1)
            off += len ? rec[len - 1] : 0; /* touch the record's last byte */
        if (rc < 0)
            break;
    }
    record_deserializer_release(&d);
    return off == (size_t)-1;
}
