/* Per-frame arenas: a bump allocator that protobuf-c unpacks a message into,
 * so that a decoded request or reply is freed in one go with its frame. The
 * first block is given by the caller (often inside the object that owns the
 * arena); more blocks are malloc'ed as needed. One owner at a time. */
#ifndef SPATE_RPC_ARENA_H
#define SPATE_RPC_ARENA_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

struct arena_block;

struct arena {
    char *cur, *end;
    struct arena_block *blocks; /* malloc'ed ones, freed by arena_release */
    ProtobufCAllocator pb;      /* allocator_data = this arena */
};

/* first/first_size: the caller's initial block (may be NULL, 0). */
void arena_init(struct arena *a, void *first, size_t first_size);
void arena_release(struct arena *a);
/* 16-byte aligned; aborts on out-of-memory like xmalloc. */
void *arena_alloc(struct arena *a, size_t size);
/* The message in data[0..len) unpacked into the arena, or NULL when the bytes
 * do not decode as desc's message. */
ProtobufCMessage *arena_unpack(struct arena *a, const ProtobufCMessageDescriptor *desc,
                               const uint8_t *data, size_t len);

#endif
