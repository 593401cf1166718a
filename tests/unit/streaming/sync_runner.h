/* A synchronous runner for unit tests: runs each vertex of a JobGraph (all
 * at parallelism 1) to its end, collecting its exchanges' serialized elements
 * in memory and feeding them to the next vertex — the path records take
 * between tasks, minus the network. A two-input vertex reads its second
 * input before its first. */
#ifndef SPATE_TEST_SYNC_RUNNER_H
#define SPATE_TEST_SYNC_RUNNER_H

#include <stdio.h>

#include "streaming/accumulators.h"
#include "streaming/job_graph.h"

struct state_backend_options;

/* The keyed state backend the tests' tasks get: RocksDB when the
 * environment's SPATE_TEST_STATE_BACKEND is rocksdb (its working folders
 * under $TMPDIR or /tmp), else the heap (NULL). The same tests run on
 * both (tests/unit/CMakeLists.txt registers them twice). */
const struct state_backend_options *test_state_backend(void);

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
    /* File sources' splits (NULL: sync_run_env_splits's, if any). */
    int (*next_split)(void *, int, char **, uint64_t *, uint64_t *, spate_error *);
    void *split_data;
};
void sync_run_cut(struct job_graph *jg, struct accumulators *acc, char **failure,
                  const struct sync_cut *cut);
/* A file source's next split from a split assigner (data): the
 * task_info.next_split of the runs above. */
int sync_split_next(void *data, int op, char **path, uint64_t *start, uint64_t *length,
                    spate_error *err);
/* The same, with file sources getting their splits from next_split. */
void sync_run_env_splits(spate_env *env, struct accumulators *acc, char **failure,
                         int (*next_split)(void *, int, char **, uint64_t *, uint64_t *,
                                           spate_error *),
                         void *data);

#endif
