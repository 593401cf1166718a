/* Checkpoints of a task's operator chain: the synchronous part on the task
 * thread (keyed state frozen copy-on-write, timers and operators' own state
 * copied), the asynchronous part on the task's snapshot thread (one state
 * file per subtask, and the state handles of the acknowledgement), and the
 * restore of a chain from the handles of a TaskRestore.
 *
 * The state file: "SPST", u32 version 1, then per operator with state its
 * keyed section, key group by key group (u32 states; per state u32 entries,
 * each u64 hash, u32 key length, key, u32 value length, value; then the key
 * group's timers as keyed_backend_snapshot writes them), then its operator
 * state elements (u32 length, bytes). The handles hold every offset. Little-
 * endian. Reading checks every length: the file comes from disk. */
#ifndef SPATE_STREAMING_STATE_SNAPSHOT_H
#define SPATE_STREAMING_STATE_SNAPSHOT_H

#include <stdint.h>

#include "proto/checkpoint.pb-c.h"
#include "state/heap_keyed_backend.h"
#include "streaming/operator_chain.h"

struct op_snapshot;

struct task_snapshot {
    int64_t checkpoint_id;
    int64_t timestamp;
    char *path; /* the state file to write */
    spate_id job_id, attempt_id;
    struct op_snapshot *ops;
    int nops;
    uint64_t sync_ns, alignment_ns;
};

/* The synchronous part: nothing of the chain changes while it runs (task
 * thread). path: the state file, in the checkpoint's folder. NULL, with
 * err naming the operator, when an operator holds state the snapshot
 * cannot capture (operator_check_state): the checkpoint is declined. */
struct task_snapshot *task_snapshot_take(const struct operator_chain *chain,
                                         const struct jg_vertex *v, int64_t checkpoint_id,
                                         int64_t timestamp, const char *path, spate_error *err);
/* The asynchronous part (any thread): writes the state file and builds the
 * acknowledgement's operator states (checkpoint__acknowledge_checkpoint__
 * free_unpacked-compatible: free it with task_ack_free). */
int task_snapshot_write(struct task_snapshot *s, Checkpoint__AcknowledgeCheckpoint **ack,
                        spate_error *err);
void task_snapshot_free(struct task_snapshot *s);
void task_ack_free(Checkpoint__AcknowledgeCheckpoint *ack);

/* Restores the chain's operators from the state r names, before any record
 * (task thread). Clear errors name the file and what is wrong with it. */
int task_restore(const struct operator_chain *chain, const struct jg_vertex *v,
                 const Checkpoint__TaskRestore *r, spate_error *err);

#endif
