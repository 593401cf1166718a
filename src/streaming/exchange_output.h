/* The output of a chain into an exchange (Flink's RecordWriterOutput with its
 * ChannelSelector): picks the target subtask by the edge's partitioner,
 * writes the stream element (header + serialized record) straight into the
 * channel's buffer when it fits, and otherwise hands over a spanning record.
 * For keyed exchanges the key hash is computed here, once, and travels with
 * the record. Task thread only. */
#ifndef SPATE_STREAMING_EXCHANGE_OUTPUT_H
#define SPATE_STREAMING_EXCHANGE_OUTPUT_H

#include "streaming/job_graph.h"
#include "streaming/operator.h"

/* The byte-level writer under an exchange: the network's record writer, or a
 * test's. */
struct exchange_sink_ops {
    /* Room for one record in channel's current buffer: *room bytes at the
     * returned pointer (NULL or a small room when the buffer is nearly full). */
    uint8_t *(*reserve)(void *sink, int channel, size_t *room);
    /* The record of len bytes written at the reserved pointer is complete. */
    int (*commit)(void *sink, int channel, size_t len);
    /* A record that did not fit: copied, spanning buffers as needed. */
    int (*emit)(void *sink, int channel, const uint8_t *bytes, size_t len);
};

struct exchange_output {
    struct output base;
    const struct exchange_sink_ops *ops;
    void *sink;
    enum partitioner_kind partitioner;
    struct key_selector key;
    const struct spate_type *type;
    int nchannels; /* the partition's subpartitions: its consumers */
    int max_parallelism;
    int next_channel;      /* rebalance and rescale round robin */
    uint64_t random;       /* shuffle's xorshift state */
    struct spate_ctx *ctx; /* the producing operator's, for user key selectors */
    uint8_t key_scratch[256];
    uint8_t *spill; /* records that do not fit the current buffer */
    size_t spill_cap;
    int error; /* the first write failure, reported by the task */
};

/* Channels are the producer's subpartitions, one per consumer it feeds:
 * every consumer subtask for all-to-all edges, its pointwise share for
 * forward and rescale (jg_pointwise_targets). */
void exchange_output_init(struct exchange_output *x, const struct jg_edge *edge,
                          const struct spate_type *type, int nchannels,
                          int consumer_max_parallelism, int subtask,
                          const struct exchange_sink_ops *ops, void *sink, struct spate_ctx *ctx);
void exchange_output_release(struct exchange_output *x);

#endif
