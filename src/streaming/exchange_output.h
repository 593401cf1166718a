/* The output of a chain into an exchange (Flink's RecordWriterOutput with its
 * ChannelSelector): picks the target subtask by the edge's partitioner,
 * and writes the stream element (header + serialized record) straight into
 * the channel's buffer.
 * For keyed exchanges the key hash is computed here, once, and travels with
 * the record. Task thread only. */
#ifndef SPATE_STREAMING_EXCHANGE_OUTPUT_H
#define SPATE_STREAMING_EXCHANGE_OUTPUT_H

#include "metrics/metrics.h"
#include "network/record_writer.h"
#include "streaming/job_graph.h"
#include "streaming/keys.h"
#include "streaming/operator.h"
#include "streaming/types.h"

/* The byte-level writer under an exchange: the network's record writer, or a
 * test's. */
struct exchange_sink_ops {
    /* Room for one record of len bytes for channel (in its buffer when it
     * fits, else in scratch that commit spans over buffers). May wait for a
     * buffer (backpressure); NULL when the wait fails (cancel, failed
     * partition), with err set. */
    uint8_t *(*reserve)(void *sink, uint32_t channel, uint32_t len, spate_error *err);
    /* The reserved record is written. */
    int (*commit)(void *sink, uint32_t len, spate_error *err);
};

struct exchange_output {
    struct output base;
    const struct exchange_sink_ops *ops;
    void *sink;
    /* The sink's per-channel room in its current buffers (the record
     * writer's, record_writer_room), where a record that fits is written
     * without a call; NULL: every record goes through ops. */
    struct rw_channel *room;
    /* A hash exchange of plain records by an 8-byte key at a fixed place,
     * key groups by mask, with room: exchange_collect_hash's own path. */
    bool keyed8;
    /* A hash exchange of a word and its count (a string key and one
     * 8-byte field, either first), with room: exchange_collect_hash_word's
     * path; the count's place in the record, and whether the word is last
     * in the serialized form (no length before it). */
    bool word8;
    bool word_last;
    uint32_t word_count_off;
    enum ship_strategy partitioner;
    struct key_selector key;
    struct key_access key_access;
    const struct spate_type *type;
    struct types_codec codec; /* the type's serializer, chosen once */
    uint32_t plain_size; /* the serialized size of every record of a plain type; 0: not plain */
    int nchannels;       /* the partition's subpartitions: its consumers */
    int max_parallelism;
    /* Key groups when max_parallelism is a power of two (the default 128):
     * a mask instead of a division per record; each key group's channel,
     * looked up instead of computed. */
    uint64_t kg_mask;
    int kg_shift; /* -1: not a power of two */
    uint32_t *kg_channel;
    int next_channel;      /* rebalance and rescale round robin */
    uint64_t random;       /* shuffle's xorshift state */
    struct spate_ctx *ctx; /* the producing operator's, for user key selectors */
    uint8_t key_scratch[256];
    spate_error error; /* the first write failure (code 0: none), seen by the task */
    int64_t last_watermark;
    bool idle;
    /* Records collected, one each whatever the number of channels it goes
     * to; the task's numRecordsOut (NULL: none) gets them between batches
     * (exchange_output_publish), not per record. */
    uint64_t records;
    uint64_t published;
    struct metric_counter *records_out;
};

/* Channels are the producer's subpartitions, one per consumer it feeds:
 * every consumer subtask for all-to-all edges, its pointwise share for
 * forward and rescale (jg_pointwise_targets). */
void exchange_output_init(struct exchange_output *x, const struct jg_edge *edge,
                          const struct spate_type *type, int nchannels,
                          int consumer_max_parallelism, int subtask,
                          const struct exchange_sink_ops *ops, void *sink, struct spate_ctx *ctx);
/* The sink's room per channel (record_writer_room), for the fast paths:
 * chooses the hash exchange's collect by the shape of its records. */
void exchange_output_set_room(struct exchange_output *x, struct rw_channel *room);
void exchange_output_release(struct exchange_output *x);

/* The records collected since the last call into the task's numRecordsOut. */
static inline void
exchange_output_publish(struct exchange_output *x)
{
    if (x->records_out != NULL && x->records != x->published)
        metric_counter_add(x->records_out, x->records - x->published);
    x->published = x->records;
}

#endif
