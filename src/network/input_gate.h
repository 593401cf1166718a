/* Input gates (Flink's SingleInputGate): a consuming task's channels, one per
 * producer subpartition it reads; local channels take buffers in place, remote
 * ones receive with credit-based flow control. input_gate_poll (Flink's
 * pollNext) never blocks and is fair per buffer. The task thread owns the
 * gate; the I/O thread and local producers hand buffers in under its mutex. */
#ifndef SPATE_NETWORK_INPUT_GATE_H
#define SPATE_NETWORK_INPUT_GATE_H

#include <stdint.h>

#include <spate/error.h>

#include "core/notifier.h"
#include "metrics/task_metrics.h"
#include "network/buffer.h"
#include "network/net_env.h"
#include "network/partition_id.h"

/* The event type that ends a subpartition; types from 16 up are the
 * streaming layer's (checkpoint barriers, ...). */
#define NET_EVENT_END_OF_PARTITION 1u
#define NET_EVENT_USER_MIN         16u

struct input_gate;

/* A gate of num_channels channels, each set once with one of the two calls
 * below before input_gate_start. metrics (may be NULL): numBytesIn,
 * inPoolUsage. */
int input_gate_new(struct net_env *env, uint32_t num_channels, struct notifier *task,
                   struct task_io_metrics *metrics, struct input_gate **out, spate_error *err);
int input_gate_set_local_channel(struct input_gate *g, uint32_t channel,
                                 const struct result_partition_id *partition, uint32_t subpartition,
                                 spate_error *err);
/* host:port is the producer TaskManager's data address. */
int input_gate_set_remote_channel(struct input_gate *g, uint32_t channel,
                                  const struct result_partition_id *partition,
                                  uint32_t subpartition, const char *host, int port,
                                  spate_error *err);
/* Requests every channel's subpartition; a producer not running yet is asked
 * again with back-off (request-backoff.initial … max), then the channel fails. */
int input_gate_start(struct input_gate *g, spate_error *err);

enum {
    INPUT_GATE_NONE = 0,   /* nothing now: wait on the notifier */
    INPUT_GATE_BUFFER = 1, /* *out is a buffer or event of *channel */
    INPUT_GATE_END = 2,    /* every channel has ended */
};
/* Non-blocking. A returned buffer is the caller's until net_buffer_recycle.
 * End-of-partition events are returned too (then the channel has ended). A
 * failed channel (its producer failed or went away, its partition was never
 * found) is a negative code with a message naming partition and peer. */
int input_gate_poll(struct input_gate *g, struct net_buffer **out, uint32_t *channel,
                    spate_error *err);
/* Aligned checkpoints (Flink's blockConsumption/resumeConsumption): a
 * blocked channel is skipped by input_gate_poll, its buffers stay queued
 * (its producer is held back by credit) until the gate resumes every
 * channel. Task thread. */
void input_gate_block_channel(struct input_gate *g, uint32_t channel);
void input_gate_resume_consumption(struct input_gate *g);
/* Whether a channel's end-of-partition has been polled (it owes no
 * checkpoint barrier any more: an ended channel counts as aligned). Task
 * thread. */
bool input_gate_channel_ended(const struct input_gate *g, uint32_t channel);

/* When the gate wants input_gate_poll called again even without a notify
 * (local partition request retries); NOTIFIER_FOREVER for never. */
uint64_t input_gate_next_deadline(struct input_gate *g);
uint32_t input_gate_num_channels(const struct input_gate *g);
/* Cancels what is still running and gives every buffer back. Buffers the
 * caller holds must have been recycled. */
void input_gate_free(struct input_gate *g);

#endif
