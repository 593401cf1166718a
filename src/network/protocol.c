/* Frame header codec of the data connection (protocol.h). */
#include <lz4.h>
#include <string.h>

#include "network/partition_id.h"
#include "network/protocol.h"

static void
put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t
get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void
net_frame_encode(const struct net_frame *f, uint8_t out[NET_FRAME_HEADER_SIZE])
{
    put32(out, f->length);
    out[4] = f->type;
    out[5] = f->flags;
    out[6] = 0;
    out[7] = 0;
    put32(out + 8, f->receiver);
    put32(out + 12, f->a);
    put32(out + 16, (uint32_t)f->b);
    put32(out + 20, f->c);
}

const char *
net_msg_name(uint8_t type)
{
    switch (type) {
    case NET_MSG_PARTITION_REQUEST:
        return "PARTITION_REQUEST";
    case NET_MSG_ADD_CREDIT:
        return "ADD_CREDIT";
    case NET_MSG_CANCEL_REQUEST:
        return "CANCEL_REQUEST";
    case NET_MSG_BUFFER:
        return "BUFFER";
    case NET_MSG_ERROR:
        return "ERROR";
    case NET_MSG_PARTITION_NOT_FOUND:
        return "PARTITION_NOT_FOUND";
    default:
        return "unknown";
    }
}

uint32_t
net_compress_bound(uint32_t segment_size)
{
    return (uint32_t)LZ4_compressBound((int)segment_size);
}

int
net_frame_decode(const uint8_t in[NET_FRAME_HEADER_SIZE], int is_server, uint32_t segment_size,
                 struct net_frame *f, spate_error *err)
{
    uint32_t max_body = 0;

    f->length = get32(in);
    f->type = in[4];
    f->flags = in[5];
    f->receiver = get32(in + 8);
    f->a = get32(in + 12);
    f->b = (int32_t)get32(in + 16);
    f->c = get32(in + 20);
    if (in[6] != 0 || in[7] != 0)
        return spate_error_set(err, SPATE_EPROTO, "frame header has non-zero reserved bytes");
    switch (f->type) {
    case NET_MSG_PARTITION_REQUEST:
    case NET_MSG_ADD_CREDIT:
    case NET_MSG_CANCEL_REQUEST:
        if (!is_server)
            goto wrong_side;
        if (f->receiver >= NET_MAX_RECEIVERS)
            return spate_error_set(err, SPATE_EPROTO, "%s for receiver %u (at most %u)",
                                   net_msg_name(f->type), f->receiver, NET_MAX_RECEIVERS - 1);
        if (f->flags != 0)
            return spate_error_set(err, SPATE_EPROTO, "%s with flags 0x%x", net_msg_name(f->type),
                                   f->flags);
        if (f->type == NET_MSG_PARTITION_REQUEST) {
            if (f->length != RESULT_PARTITION_ID_BYTES)
                return spate_error_set(err, SPATE_EPROTO,
                                       "PARTITION_REQUEST body of %u bytes (expected %d)",
                                       f->length, RESULT_PARTITION_ID_BYTES);
            if (f->b < 0)
                return spate_error_set(err, SPATE_EPROTO, "negative initial credit %d", f->b);
            return 0;
        }
        if (f->type == NET_MSG_ADD_CREDIT && (f->a == 0 || f->a > NET_MAX_RECEIVERS * 64u))
            return spate_error_set(err, SPATE_EPROTO, "ADD_CREDIT of %u", f->a);
        max_body = 0;
        break;
    case NET_MSG_BUFFER:
        if (is_server)
            goto wrong_side;
        if (f->flags & ~(NET_FLAG_EVENT | NET_FLAG_COMPRESSED))
            return spate_error_set(err, SPATE_EPROTO, "BUFFER with unknown flags 0x%x", f->flags);
        if (f->b < 0)
            return spate_error_set(err, SPATE_EPROTO, "BUFFER with negative backlog %d", f->b);
        if (f->flags & NET_FLAG_EVENT) {
            if (f->flags & NET_FLAG_COMPRESSED)
                return spate_error_set(err, SPATE_EPROTO, "compressed event");
            if (f->length < 4 || f->length > NET_EVENT_MAX)
                return spate_error_set(err, SPATE_EPROTO, "event of %u bytes", f->length);
            return 0;
        }
        if (f->flags & NET_FLAG_COMPRESSED) {
            if (f->c == 0 || f->c > segment_size)
                return spate_error_set(err, SPATE_EPROTO,
                                       "compressed buffer of %u bytes (segment size %u)", f->c,
                                       segment_size);
            max_body = net_compress_bound(segment_size);
            if (f->length == 0)
                return spate_error_set(err, SPATE_EPROTO, "empty compressed buffer");
        } else {
            max_body = segment_size;
        }
        break;
    case NET_MSG_ERROR:
        if (is_server)
            goto wrong_side;
        max_body = NET_ERROR_MAX;
        break;
    case NET_MSG_PARTITION_NOT_FOUND:
        if (is_server)
            goto wrong_side;
        max_body = 0;
        break;
    default:
        return spate_error_set(err, SPATE_EPROTO, "unknown frame type %u", f->type);
    }
    if (f->length > max_body)
        return spate_error_set(err, SPATE_EPROTO, "%s body of %u bytes (at most %u)",
                               net_msg_name(f->type), f->length, max_body);
    return 0;

wrong_side:
    return spate_error_set(err, SPATE_EPROTO, "%s sent by the %s side", net_msg_name(f->type),
                           is_server ? "consumer" : "producer");
}
