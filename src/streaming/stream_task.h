/* The StreamTask: one parallel instance of a JobGraph vertex, run on its own
 * task thread (DESIGN.md §5). It opens the operator chain, its result
 * partitions and input gates, then runs the mailbox loop: the default action
 * processes input (or polls the source); the only blocking point is the wait
 * on the task's notifier, bounded by the next flush or source deadline, so a
 * cancel wakes it at once. Mails (checkpoint triggers, timers) arrive with the
 * checkpoint and streaming issues. The caller (the TaskManager's Task) owns
 * the thread, the notifier and the network environment. */
#ifndef SPATE_STREAMING_STREAM_TASK_H
#define SPATE_STREAMING_STREAM_TASK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/notifier.h"
#include "metrics/task_metrics.h"
#include "network/net_env.h"
#include "network/partition_id.h"
#include "streaming/job_graph.h"
#include "streaming/operator.h"

/* Where one input channel reads from: a producer subpartition, in this
 * TaskManager (local) or at a data address. */
struct input_channel_desc {
    struct result_partition_id partition;
    uint32_t subpartition;
    bool local;
    char host[64];
    int port;
};

/* One input gate: the channels of one input edge of the vertex. */
struct input_gate_desc {
    int edge; /* index into the JobGraph's edges */
    uint32_t nchannels;
    struct input_channel_desc *channels;
};

/* One result partition: what this subtask produces for one output edge. */
struct result_partition_desc {
    int edge;
    struct result_partition_id partition;
    uint32_t nsubpartitions;
};

struct stream_task_params {
    const struct job_graph *graph; /* with its functions resolved */
    int vertex;
    struct task_info info; /* subtask, parallelism, accumulators, print_out, splits */
    struct net_env *net;
    struct notifier *notifier;                /* the task's; cancel it to cancel the task */
    struct result_partition_desc *partitions; /* one per output edge, in vertex order */
    int npartitions;
    struct input_gate_desc *gates; /* one per input edge, in vertex order */
    int ngates;
    int64_t buffer_timeout_ms;       /* execution.buffer-timeout */
    struct task_io_metrics *metrics; /* may be NULL */
    /* Called once, on the task thread, when the task starts processing
     * (INITIALIZING -> RUNNING), may be NULL. */
    void (*on_running)(void *data);
    void *data;
};

/* Runs the task to its end on the calling thread. 0: FINISHED (bounded input
 * ended and everything was flushed); SPATE_ECANCELED: cancelled; another
 * code: FAILED, with the reason in err (a user function's failure text, a
 * network failure naming partition and peer, ...). */
int stream_task_run(const struct stream_task_params *p, spate_error *err);

#endif
