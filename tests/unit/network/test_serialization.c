/* Unit tests of the record format: the writer's framing and the
 * deserializer's reassembly of records spanning buffers, zero-length and
 * large records, corrupt streams (which are errors, never crashes), the
 * partitioners and the frame header codec. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "network/partitioner.h"
#include "network/protocol.h"
#include "network/record_reader.h"
#include "network/record_writer.h"

static void
noop_recycle(struct net_buffer *buf)
{
    buf->owner = NULL;
}

static struct net_buffer
wrap(uint8_t *data, uint32_t size)
{
    struct net_buffer b = {
        .data = data, .size = size, .capacity = size, .recycler = noop_recycle, .owner = (void *)1
    };
    return b;
}

/* Splits a stream of framed records at the given cuts into buffers and
 * checks that the deserializer gives each record back whole. */
static void
check_split(const uint32_t *lens, int n, const uint32_t *cuts, int ncuts)
{
    size_t total = 0, off = 0, pos = 0;
    uint8_t *stream;
    struct record_deserializer d;
    int got = 0, cut = 0;
    spate_error err;

    for (int i = 0; i < n; i++)
        total += 4 + lens[i];
    stream = malloc(total);
    for (int i = 0; i < n; i++) {
        memcpy(stream + off, &lens[i], 4);
        memset(stream + off + 4, 'a' + i, lens[i]);
        off += 4 + lens[i];
    }
    record_deserializer_init(&d);
    while (pos < total) {
        size_t end = cut < ncuts ? cuts[cut++] : total;
        struct net_buffer b = wrap(stream + pos, (uint32_t)(end - pos));
        const uint8_t *rec;
        uint32_t len;
        int rc;

        record_deserializer_set_buffer(&d, &b);
        while ((rc = record_deserializer_next(&d, &rec, &len, &err)) == 1) {
            cr_assert_eq(len, lens[got]);
            for (uint32_t k = 0; k < len; k++)
                cr_assert_eq(rec[k], 'a' + got);
            got++;
        }
        cr_assert_eq(rc, 0, "%s", err.message);
        cr_assert_null(b.owner, "a used-up buffer is recycled");
        pos = end;
    }
    cr_assert_eq(got, n);
    cr_assert_not(record_deserializer_has_partial(&d));
    record_deserializer_release(&d);
    free(stream);
}

Test(serialization, records_spanning_buffers_come_back_whole)
{
    uint32_t lens[] = { 10, 0, 5000, 3, 70000, 1 };
    /* Cuts fall inside records, never inside a length (the writer's rule). */
    uint32_t cuts[] = { 25, 1000, 5018, 6000, 40000, 75000 };

    check_split(lens, 6, NULL, 0);
    check_split(lens, 6, cuts, 6);
}

/* The spill area grows with the bytes that came, not with the length a
 * record's prefix declares: a corrupt stream, or a peer that stops after a
 * length, costs what it sent. */
Test(serialization, a_spanning_record_takes_memory_as_its_bytes_arrive)
{
    uint32_t big = RECORD_MAX_BYTES, lens[] = { 1u << 20, 7 }, cuts[300];
    uint8_t head[16] = { 0 };
    struct record_deserializer d;
    struct net_buffer b;
    const uint8_t *rec;
    uint32_t len;
    spate_error err;
    int n = 0;

    memcpy(head, &big, 4);
    b = wrap(head, sizeof head);
    record_deserializer_init(&d);
    record_deserializer_set_buffer(&d, &b);
    cr_assert_eq(record_deserializer_next(&d, &rec, &len, &err), 0);
    cr_assert(record_deserializer_has_partial(&d));
    cr_assert_leq(d.spill_cap, sizeof head, "a %u-byte record's first 12 bytes took %u bytes", big,
                  d.spill_cap);
    record_deserializer_release(&d);
    /* 1 MiB in buffers of 4000 bytes comes back whole as the area grows. */
    for (uint32_t at = 4000; at < 4 + lens[0] && n < 300; at += 4000)
        cuts[n++] = at;
    check_split(lens, 2, cuts, n);
}

Test(serialization, corrupt_streams_are_errors)
{
    struct record_deserializer d;
    uint8_t junk[16];
    struct net_buffer b;
    const uint8_t *rec;
    uint32_t len, huge = RECORD_MAX_BYTES + 1;
    spate_error err;

    /* stray bytes shorter than a length */
    memset(junk, 0, sizeof junk);
    b = wrap(junk, 6);
    record_deserializer_init(&d);
    record_deserializer_set_buffer(&d, &b);
    cr_assert_eq(record_deserializer_next(&d, &rec, &len, &err), 1); /* len 0 */
    cr_assert_eq(record_deserializer_next(&d, &rec, &len, &err), SPATE_EPROTO);
    record_deserializer_release(&d);
    /* an absurd length */
    memcpy(junk, &huge, 4);
    b = wrap(junk, 16);
    record_deserializer_init(&d);
    record_deserializer_set_buffer(&d, &b);
    cr_assert_eq(record_deserializer_next(&d, &rec, &len, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "corrupt") != NULL);
    record_deserializer_release(&d);
}

Test(serialization, partitioners)
{
    struct partitioner p;
    int seen[4] = { 0 };

    partitioner_init(&p, PARTITIONER_REBALANCE, 4, 128);
    for (int i = 0; i < 400; i++)
        seen[partitioner_select(&p, 0)]++;
    for (int i = 0; i < 4; i++)
        cr_assert_eq(seen[i], 100, "round-robin is even");
    partitioner_init(&p, PARTITIONER_HASH, 3, 128);
    cr_assert_eq(partitioner_select(&p, 42), 0);
    cr_assert_eq(partitioner_select(&p, 43), 1);
    cr_assert_eq(partitioner_select(&p, 127), 2);
    partitioner_init(&p, PARTITIONER_GLOBAL, 5, 128);
    cr_assert_eq(partitioner_select(&p, 99), 0);
    partitioner_init(&p, PARTITIONER_FORWARD, 1, 128);
    cr_assert_eq(partitioner_select(&p, 99), 0);
    cr_assert_str_eq(partitioner_name(PARTITIONER_RESCALE), "RESCALE");
}

Test(serialization, frame_headers_round_trip_and_bad_ones_are_refused)
{
    struct net_frame f = { .length = 1000, .type = NET_MSG_BUFFER, .receiver = 7, .a = 3, .b = 5 },
                     g;
    uint8_t h[NET_FRAME_HEADER_SIZE];
    spate_error err;

    net_frame_encode(&f, h);
    cr_assert_eq(net_frame_decode(h, 0, 32768, &g, &err), 0, "%s", err.message);
    cr_assert_eq(g.length, 1000);
    cr_assert_eq(g.receiver, 7);
    cr_assert_eq(g.a, 3);
    cr_assert_eq(g.b, 5);
    cr_assert_eq(net_frame_decode(h, 1, 32768, &g, &err), SPATE_EPROTO, "wrong side");
    f.length = 40000;
    net_frame_encode(&f, h);
    cr_assert_eq(net_frame_decode(h, 0, 32768, &g, &err), SPATE_EPROTO, "larger than a buffer");
    f.type = 99;
    net_frame_encode(&f, h);
    cr_assert_eq(net_frame_decode(h, 0, 32768, &g, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "unknown frame type") != NULL);
}
