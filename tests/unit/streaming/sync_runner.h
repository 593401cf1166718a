/* A synchronous runner for unit tests: runs each vertex of a JobGraph (all
 * at parallelism 1) to its end, collecting its exchanges' serialized elements
 * in memory and feeding them to the next vertex — the path records take
 * between tasks, minus the network. A two-input vertex reads its second
 * input before its first. */
#ifndef SPATE_TEST_SYNC_RUNNER_H
#define SPATE_TEST_SYNC_RUNNER_H

#include <stdbool.h>
#include <stdio.h>

#include "streaming/accumulators.h"
#include "streaming/connector_config.h"
#include "streaming/job_graph.h"

struct state_backend_options;

/* The keyed state backend the tests' tasks get: RocksDB when the
 * environment's SPATE_TEST_STATE_BACKEND is rocksdb (its working folders
 * under $TMPDIR or /tmp), its timers in RocksDB too with rocksdb-timers,
 * else the heap (NULL). The same tests run on
 * both (tests/unit/CMakeLists.txt registers them twice). */
const struct state_backend_options *test_state_backend(void);
/* The other one: RocksDB when the tests' is the heap, else the heap. */
const struct state_backend_options *test_other_state_backend(void);

/* Builds env's JobGraph and runs it; *failure is a user function's failure
 * (malloc'd) or NULL. */
void sync_run_env(spate_env *env, struct accumulators *acc, char **failure);
void sync_run(struct job_graph *jg, struct accumulators *acc, char **failure);
/* A cut: the vertex holding an operator of kind `kind` takes a checkpoint
 * (its state file in dir) after `after` elements of its input (a source:
 * after it emitted `after` records; -1: never), completes it, fails, and
 * goes on restored from it — what a kill and a restart do to a task. The
 * tasks run as a job that takes checkpoints (exactly-once sinks); print
 * sinks write to print_out (NULL: stdout). */
struct sync_cut {
    enum operator_kind kind;
    int64_t after;
    const char *dir;
    FILE *print_out;
    /* Source API sources' splits (NULL: sync_run_env_splits's, if any). */
    struct sync_splits *splits;
    /* The restored task gets the other backend (test_other_state_backend):
     * what the heap wrote RocksDB restores, and the other way round. */
    bool other_backend;
};
void sync_run_cut(struct job_graph *jg, struct accumulators *acc, char **failure,
                  const struct sync_cut *cut);
/* A file source's split enumerator on a JobMaster's source coordinator
 * (connectors/source_coordinator.h), its files cut into splits of
 * split_size bytes: the task_info.request_splits of the runs above. */
struct sync_splits {
    struct file_source_config config;
    struct operator_settings settings;
    struct source_coordinator *coordinator;
};
void sync_splits_init(struct sync_splits *s, const char *path, uint64_t split_size);
void sync_splits_release(struct sync_splits *s);
int sync_request_splits(void *data, int op, bool register_reader, bool request_split,
                        int64_t last_checkpoint,
                        int (*add)(void *arg, const void *split, size_t len), void *arg,
                        bool *no_more, spate_error *err);
/* The same, with file sources getting their splits from splits. */
void sync_run_env_splits(spate_env *env, struct accumulators *acc, char **failure,
                         struct sync_splits *splits);

#endif
