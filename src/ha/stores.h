/* The HA stores a new leader recovers from (Flink's JobGraphStore,
 * JobResultStore, CompletedCheckpointStore, CheckpointIDCounter). Two
 * implementations each: in memory (stores_memory.c: none, embedded) and
 * ZooKeeper pointers with the data in high-availability.storageDir
 * (stores_zk.c). Calls block; every one may run on any thread.
 *
 * Their users: the Dispatcher stores a submission (job_graph_store->put,
 * kind job-graph: the submitted JobGraph with its library's key) before its
 * JobMaster starts; a job that ends gets a dirty result, its graph removed,
 * its result marked clean (disp_job_ended); on a grant,
 * dispatcher_grant_leadership recovers every stored job graph without a
 * job result (Flink's RecoverAllJobs). A job's JobMaster takes its
 * checkpoint store (state.checkpoints.num-retained) and id counter; an
 * entry's data is the path of the checkpoint's `_metadata`; a new leader
 * restores from latest(); shutdown(globally_terminal) on the job's end
 * (suspended: false, they stay for the next leader). */
#ifndef SPATE_HA_STORES_H
#define SPATE_HA_STORES_H

/* Entries are external input once written: a missing or corrupt file, a
 * pointer that does not decode, is an error return naming the entry and a
 * log line, never a crash; listing skips such entries with a log line. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

#include "core/id.h"

/* ---- job graphs: what the Dispatcher persists before it runs a job -------- */

struct job_graph_record {
    spate_id job_id;
    char *kind;    /* the Dispatcher's tag: "job-graph" */
    uint8_t *data; /* the submission as the Dispatcher encoded it */
    size_t len;
};

/* Frees the fields of a record a store returned. */
void job_graph_record_release(struct job_graph_record *r);

struct job_graph_store;

struct job_graph_store_ops {
    /* Adds or replaces r->job_id's entry; r is borrowed. */
    int (*put)(struct job_graph_store *s, const struct job_graph_record *r, spate_error *err);
    /* Flink's recoverJobGraph; SPATE_ENOENT when there is none. */
    int (*get)(struct job_graph_store *s, const spate_id *job, struct job_graph_record *out,
               spate_error *err);
    /* Every job id in the store (*ids malloc'd). */
    int (*job_ids)(struct job_graph_store *s, spate_id **ids, size_t *count, spate_error *err);
    /* Flink's globalCleanup: the entry and its data; no entry is fine. */
    int (*remove)(struct job_graph_store *s, const spate_id *job, spate_error *err);
    void (*free)(struct job_graph_store *s);
};

struct job_graph_store {
    const struct job_graph_store_ops *ops;
};

/* ---- job results: a finished job is not run again after a failover ------- */

struct job_result {
    spate_id job_id;
    char state[16]; /* FINISHED, CANCELED, FAILED */
    int64_t end_time;
    char *failure; /* may be NULL */
};

enum job_result_entry { JOB_RESULT_NONE, JOB_RESULT_DIRTY, JOB_RESULT_CLEAN };

struct job_result_store;

struct job_result_store_ops {
    /* The job reached a globally terminal state; its clean-up is pending. */
    int (*create_dirty)(struct job_result_store *s, const struct job_result *r, spate_error *err);
    /* Its clean-up (job graph, checkpoints) is done. */
    int (*mark_clean)(struct job_result_store *s, const spate_id *job, spate_error *err);
    int (*lookup)(struct job_result_store *s, const spate_id *job, enum job_result_entry *out,
                  spate_error *err);
    /* The results whose clean-up is still pending (*out malloc'd; release
     * each with job_result_release). */
    int (*dirty_results)(struct job_result_store *s, struct job_result **out, size_t *count,
                         spate_error *err);
    void (*free)(struct job_result_store *s);
};

struct job_result_store {
    const struct job_result_store_ops *ops;
};

void job_result_release(struct job_result *r);

/* ---- completed checkpoints of one job ------------------------------------- */

struct completed_checkpoint {
    uint64_t id;
    uint8_t *metadata; /* the checkpoint's handle, as the coordinator wrote it */
    size_t len;
};

void completed_checkpoint_release(struct completed_checkpoint *c);

struct completed_checkpoint_store;

struct completed_checkpoint_store_ops {
    /* Adds checkpoint c (borrowed) and drops the oldest beyond the store's
     * max_retained (Flink's addCheckpointAndSubsumeOldestOne). */
    int (*add)(struct completed_checkpoint_store *s, const struct completed_checkpoint *c,
               spate_error *err);
    /* The newest; SPATE_ENOENT when there is none. */
    int (*latest)(struct completed_checkpoint_store *s, struct completed_checkpoint *out,
                  spate_error *err);
    /* Ids of the retained checkpoints, oldest first (*ids malloc'd). */
    int (*ids)(struct completed_checkpoint_store *s, uint64_t **ids, size_t *count,
               spate_error *err);
    /* The job ended: globally terminal discards every checkpoint; otherwise
     * (suspended: another leader takes over) they stay. */
    int (*shutdown)(struct completed_checkpoint_store *s, bool globally_terminal, spate_error *err);
    void (*free)(struct completed_checkpoint_store *s);
};

struct completed_checkpoint_store {
    const struct completed_checkpoint_store_ops *ops;
};

/* ---- the checkpoint id counter of one job --------------------------------- */

struct checkpoint_id_counter;

struct checkpoint_id_counter_ops {
    /* The next checkpoint id (the first is 1), shared by every leader. */
    int (*get_and_increment)(struct checkpoint_id_counter *c, uint64_t *out, spate_error *err);
    int (*get)(struct checkpoint_id_counter *c, uint64_t *out, spate_error *err);
    /* Restoring from a savepoint sets the counter past it. */
    int (*set)(struct checkpoint_id_counter *c, uint64_t value, spate_error *err);
    int (*shutdown)(struct checkpoint_id_counter *c, bool globally_terminal, spate_error *err);
    void (*free)(struct checkpoint_id_counter *c);
};

struct checkpoint_id_counter {
    const struct checkpoint_id_counter_ops *ops;
};

/* ---- in memory (none, embedded) --------------------------------------------- */

/* Standalone stores live as long as the process (Flink's standalone and
 * embedded services keep nothing across a JobManager restart either). */
struct job_graph_store *ha_memory_job_graph_store_new(void);
struct job_result_store *ha_memory_job_result_store_new(void);
struct completed_checkpoint_store *ha_memory_checkpoint_store_new(uint32_t max_retained);
struct checkpoint_id_counter *ha_memory_checkpoint_id_counter_new(void);

/* ---- files under a folder (ZooKeeper's job result store, as Flink's
 * FileSystemJobResultStore: <dir>/<jobid>_DIRTY.pb, then <jobid>.pb) ------- */
int ha_file_job_result_store_new(const char *dir, struct job_result_store **out, spate_error *err);

#endif
