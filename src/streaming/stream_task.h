/* The StreamTask: one parallel instance of a JobGraph vertex, run on its own
 * task thread. It opens the operator chain, its result
 * partitions and input gates, then runs the mailbox loop: the default action
 * processes input (or polls the source); the only blocking point is the wait
 * on the task's notifier, bounded by the next flush or source deadline, so a
 * cancel wakes it at once. Mails from other threads (checkpoint triggers and
 * notifications) are run between batches of records. The caller (the
 * TaskManager's Task) owns the thread, the notifier, the mailbox and the
 * network environment. */
#ifndef SPATE_STREAMING_STREAM_TASK_H
#define SPATE_STREAMING_STREAM_TASK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/notifier.h"
#include "proto/checkpoint.pb-c.h"
#include "metrics/task_metrics.h"
#include "network/net_env.h"
#include "network/partition_id.h"
#include "streaming/job_graph.h"
#include "streaming/operator.h"

/* Mails to a running task (Flink's mailbox), from any thread: a checkpoint
 * trigger (sources), a checkpoint's completion or abort. */
enum task_mail_kind {
    TASK_MAIL_TRIGGER,
    TASK_MAIL_COMPLETE,
    TASK_MAIL_ABORTED,
};

struct task_mail {
    struct task_mail *next;
    enum task_mail_kind kind;
    int64_t checkpoint_id;
    int64_t timestamp;
    int type;       /* checkpoint.proto's CheckpointType */
    bool drain;     /* a stop: MAX_WATERMARK first, every window and timer fires */
    char *location; /* trigger: the checkpoint's folder */
};

struct task_mailbox {
    pthread_mutex_t lock;
    struct task_mail *head, *tail;
    _Atomic bool pending; /* read per batch of records, without the lock */
    struct notifier *notifier;
};

void task_mailbox_init(struct task_mailbox *mb, struct notifier *notifier);
/* Frees the mails never run. */
void task_mailbox_release(struct task_mailbox *mb);
/* Any thread: queues a mail (location copied) and wakes the task. */
void task_mailbox_post(struct task_mailbox *mb, enum task_mail_kind kind, int64_t checkpoint_id,
                       int64_t timestamp, int type, bool drain, const char *location);

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
    /* Checkpoints (all may be NULL/false when the job takes none). */
    struct task_mailbox *mailbox;
    bool exactly_once;                      /* align barriers (else at least once: count them) */
    const Checkpoint__TaskRestore *restore; /* the state to start from */
    /* A snapshot is durable (the snapshot thread; ack is freed after the
     * call) or cannot be taken (any of the task's threads). */
    void (*checkpoint_ack)(void *data, Checkpoint__AcknowledgeCheckpoint *ack);
    void (*checkpoint_decline)(void *data, int64_t checkpoint_id, const char *reason);
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
