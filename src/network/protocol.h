/* The data connection's frames (Flink's NettyMessage) after the handshake
 * (rpc/handshake.h, HANDSHAKE_MAGIC_DATA): a 24-byte little-endian header and
 * `length` body bytes; the layout and each message's fields are below. Pure
 * functions, any thread. Decoding checks everything: the bytes are external
 * input. */
#ifndef SPATE_NETWORK_PROTOCOL_H
#define SPATE_NETWORK_PROTOCOL_H

#include <stdint.h>

#include <spate/error.h>

#include "network/buffer.h"

#define NET_RECEIVER_NONE   0xffffffffu
#define NET_MAX_RECEIVERS   65536u /* receiver ids a connection may use */
#define NET_ERROR_MAX       1024u  /* longest error message body */
#define NET_EVENT_MAX       65536u /* longest event buffer */
#define NET_FLAG_EVENT      0x01u
#define NET_FLAG_COMPRESSED 0x02u

/* consumer → producer: PARTITION_REQUEST (body: the partition id; a:
 * subpartition, b: initial credit), ADD_CREDIT (a: credit), CANCEL_REQUEST.
 * producer → consumer: BUFFER (a: sequence number, b: backlog, c: size before
 * compression; body: the buffer), ERROR (a: error code, body: message; receiver
 * NET_RECEIVER_NONE for the whole connection), PARTITION_NOT_FOUND. */
enum net_msg_type {
    NET_MSG_PARTITION_REQUEST = 1,
    NET_MSG_ADD_CREDIT = 2,
    NET_MSG_CANCEL_REQUEST = 3,
    NET_MSG_BUFFER = 10,
    NET_MSG_ERROR = 11,
    NET_MSG_PARTITION_NOT_FOUND = 12,
};

/* The header on the wire:
 *   0  u32 length    4 u8 type   5 u8 flags   6 u16 zero   8 u32 receiver
 *   12 u32 a         16 i32 b    20 u32 c */
struct net_frame {
    uint32_t length;
    uint8_t type;
    uint8_t flags;
    uint32_t receiver;
    uint32_t a;
    int32_t b;
    uint32_t c;
};

_Static_assert(NET_FRAME_HEADER_SIZE == 24, "frame header layout");

void net_frame_encode(const struct net_frame *f, uint8_t out[NET_FRAME_HEADER_SIZE]);
/* Decodes and checks a header: a known type; for is_server (the producer
 * side, which receives requests) only consumer messages and for the client
 * only producer messages; body lengths within bounds (buffers up to
 * segment_size, their compressed form up to net_compress_bound). */
int net_frame_decode(const uint8_t in[NET_FRAME_HEADER_SIZE], int is_server, uint32_t segment_size,
                     struct net_frame *f, spate_error *err);
const char *net_msg_name(uint8_t type);
/* The largest compressed form of a segment_size buffer. */
uint32_t net_compress_bound(uint32_t segment_size);

#endif
