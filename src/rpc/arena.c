/* Bump allocator for decoded messages (arena.h). */
#include <stdint.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "rpc/arena.h"

#define ARENA_ALIGN      16
#define ARENA_BLOCK_SIZE 4096

struct arena_block {
    struct arena_block *next;
    _Alignas(ARENA_ALIGN) char data[];
};

static void *
arena_pb_alloc(void *data, size_t size)
{
    return arena_alloc(data, size);
}

static void
arena_pb_free(void *data, void *p)
{
    /* Freed with the arena. */
    (void)data;
    (void)p;
}

void
arena_init(struct arena *a, void *first, size_t first_size)
{
    uintptr_t p = (uintptr_t)first;
    uintptr_t aligned = (p + ARENA_ALIGN - 1) & ~(uintptr_t)(ARENA_ALIGN - 1);

    if (first == NULL || first_size < aligned - p) {
        a->cur = a->end = NULL;
    } else {
        a->cur = (char *)aligned;
        a->end = (char *)first + first_size;
    }
    a->blocks = NULL;
    a->pb.alloc = arena_pb_alloc;
    a->pb.free = arena_pb_free;
    a->pb.allocator_data = a;
}

void
arena_release(struct arena *a)
{
    struct arena_block *b = a->blocks, *next;

    for (; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    a->blocks = NULL;
    a->cur = a->end = NULL;
}

void *
arena_alloc(struct arena *a, size_t size)
{
    size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    struct arena_block *b;
    size_t bsize;
    void *p;

    if (need == 0)
        need = ARENA_ALIGN;
    if ((size_t)(a->end - a->cur) >= need && a->cur != NULL) {
        p = a->cur;
        a->cur += need;
        return p;
    }
    bsize = need > ARENA_BLOCK_SIZE - sizeof *b ? need : ARENA_BLOCK_SIZE - sizeof *b;
    b = xmalloc(sizeof *b + bsize);
    b->next = a->blocks;
    a->blocks = b;
    a->cur = b->data + need;
    a->end = b->data + bsize;
    return b->data;
}

ProtobufCMessage *
arena_unpack(struct arena *a, const ProtobufCMessageDescriptor *desc, const uint8_t *data,
             size_t len)
{
    return protobuf_c_message_unpack(desc, &a->pb, len, data);
}
