/* Checkpoints of a task's operator chain: the synchronous part on the task
 * thread (each operator's keyed state backend frozen through its table,
 * operators' own state copied), the asynchronous part on the task's
 * snapshot thread (one state file per subtask, state/state_file.h: per
 * operator its backend's keyed section, then its operator state elements,
 * its own and its backend's operator-scope states'; and the state handles
 * of the acknowledgement), and the restore of a chain from the handles of a
 * TaskRestore. What is about state is the backend's; what is about
 * operators (their own state, source positions) is here. */
#ifndef SPATE_STREAMING_STATE_SNAPSHOT_H
#define SPATE_STREAMING_STATE_SNAPSHOT_H

#include <stdint.h>

#include "proto/checkpoint.pb-c.h"
#include "state/keyed_state_backend.h"
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
 * thread). path: the state file, in the checkpoint's folder; shared_dir:
 * the job's folder of files incremental checkpoints share, NULL for a
 * savepoint (canonical, never incremental). NULL, with
 * err naming the operator, when an operator holds state the snapshot
 * cannot capture (operator_check_state): the checkpoint is declined. */
struct task_snapshot *task_snapshot_take(const struct operator_chain *chain,
                                         const struct jg_vertex *v, int64_t checkpoint_id,
                                         int64_t timestamp, const char *shared_dir,
                                         const char *path, spate_error *err);
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
