/* The StreamTask's insides, shared by stream_task.c (the mailbox loop)
 * and task_checkpoints.c (barriers, snapshots, mails). Task thread only. */
#ifndef SPATE_STREAMING_STREAM_TASK_INT_H
#define SPATE_STREAMING_STREAM_TASK_INT_H

#include "network/input_gate.h"
#include "network/record_reader.h"
#include "network/record_writer.h"
#include "streaming/exchange_output.h"
#include "streaming/operator_chain.h"
#include "streaming/stream_task.h"

/* Flink's StatusWatermarkValve for one input gate: the gate's watermark is
 * the minimum over its channels that are not idle. */
struct valve {
    int64_t *channel_watermark;
    bool *channel_idle;
    uint32_t nchannels;
    int64_t watermark; /* the gate's, last computed */
    bool idle;         /* every channel idle */
};

struct stream_task {
    const struct stream_task_params *p;
    const struct jg_vertex *v;
    struct result_partition **partitions;
    struct record_writer **writers;
    struct exchange_output *xouts;
    struct output **outs;
    struct input_gate **gates;
    struct record_reader **readers;
    bool *gate_ended;
    int gates_ended;
    struct valve *valves;
    int64_t watermark; /* handed to the head: the minimum over active gates */
    bool idle;
    int64_t output_watermark; /* as last published to the metrics */
    uint64_t next_latency_ns; /* a source's next latency marker (0: none) */
    struct operator_chain *chain;
    void *in_rec;                /* the head's input record, deserialized */
    void *in_rec2;               /* a two-input head's second input record */
    size_t in_plain_size;        /* the head's input type is plain: its size (else 0) */
    uint64_t records_in;         /* not yet added to numRecordsIn */
    bool *gate_second;           /* gate g feeds a two-input head's second input */
    struct task_checkpoints *cp; /* NULL: the job takes no checkpoints */
    /* Stop with a savepoint (Flink's stop-with-savepoint): the terminal
     * savepoint this task took (0: none), whether it completed, whether a
     * source stopped for it (and drained), whether the stop ends without
     * draining (operators are not told their input ended). */
    int64_t terminal_id;
    bool terminal_done;
    bool source_stopping;
    bool stop_no_drain;
    /* The operators' end of input ran: a checkpoint whose alignment
     * waited for it (every channel ended) is taken. Flink's final
     * checkpoint (FLIP-147): a task with a two-phase-commit operator
     * finishes only when a checkpoint it took after its end of input
     * (final_id, 0: none yet) completed. */
    bool input_ended;
    int64_t final_id;
    bool final_done;
};

/* ---- checkpoints (task_checkpoints.c) ---- */

/* Sets up checkpointing when the task has a mailbox, and restores the
 * chain's state from p->restore. After the chain and gates exist. */
int task_checkpoints_open(struct stream_task *t, spate_error *err);
/* Waits for the snapshots being written, then frees it all. */
void task_checkpoints_close(struct stream_task *t);
/* Runs the mails queued for the task (between batches of records). */
int task_run_mails(struct stream_task *t, spate_error *err);
/* A checkpoint barrier arrived on channel of gate g. */
int task_on_barrier(struct stream_task *t, int g, uint32_t channel, const uint8_t *payload,
                    uint32_t len, spate_error *err);
/* After a gate ended: its channels no longer owe a barrier. */
int task_check_alignment(struct stream_task *t, spate_error *err);
/* A task that took a terminal savepoint waits for its completion before it
 * finishes (sinks commit on it); SPATE_ECANCELED when cancelled, and a
 * failed stop (aborted) fails the task, which the job restarts from it. */
int task_await_terminal(struct stream_task *t, spate_error *err);
/* The final checkpoint: runs mails (triggers take checkpoints, aborts wait
 * for the next) until a checkpoint taken after t->input_ended was set
 * completes; SPATE_ECANCELED when cancelled. */
int task_await_final(struct stream_task *t, spate_error *err);

/* Stop without drain: a network event after a stopped source's last record. */
#define NET_EVENT_END_OF_DATA 17u

static inline bool
task_has_mail(const struct stream_task *t)
{
    return t->p->mailbox != NULL &&
           atomic_load_explicit(&t->p->mailbox->pending, memory_order_relaxed);
}

#endif
