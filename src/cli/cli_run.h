/* `spate run [--local | -m HOST:PORT] [-d] [-p N] [-s SAVEPOINT [-n]]
 * [--json FILE] JOB.so [ARGS]`: runs the job library's spate_job_main
 * (streaming/packaged_program.h) in the client with one of two executors:
 * the mini cluster's (--local or execution.target: local; it starts the
 * mini cluster, stores the library in its BlobServer and submits to its
 * Dispatcher) or, by default as `flink run`, a cluster's over REST (-m,
 * else rest.address and rest.port, localhost:8081: POST /jobs with the
 * JobGraph and the library; a refused connection says how to run with
 * --local). -s/--fromSavepoint resumes from a savepoint folder or its
 * _metadata, made absolute and written into the JobGraph (a warning when
 * operators have no uid); -n/--allowNonRestoredState. Prints the job's id,
 * a live status line (on a TTY; state changes otherwise), the final status,
 * runtime and accumulators (and the mini cluster's free slots; -d: only the
 * id); SIGINT/SIGTERM cancel the job. --json writes the result and the plan
 * to FILE, for tests and benchmarks. Exit status 0 only when the job
 * finished (or, detached, was submitted). */
#ifndef SPATE_CLI_CLI_RUN_H
#define SPATE_CLI_CLI_RUN_H

#include <stdbool.h>

#include "core/config.h"
#include "streaming/stream_graph.h"

int cli_run(const struct config *conf, int argc, char **argv);

/* The executor of jobs of built-in operators only (SQL's: no library),
 * each run as `spate run` runs one — on a mini cluster of its own (local,
 * or execution.target: local) or on a cluster over REST (target, else the
 * configured one) — one job per execute; SIGINT/SIGTERM cancel the one
 * running (they are blocked here, for the signalfd). */
struct cli_job_executor;
struct cli_job_executor *cli_job_executor_new(const struct config *conf, bool local,
                                              const char *target, int parallelism);
struct executor cli_job_executor_get(struct cli_job_executor *x);
/* Whether its jobs run on a cluster over REST (else on a mini cluster). */
bool cli_job_executor_remote(const struct cli_job_executor *x);
void cli_job_executor_free(struct cli_job_executor *x);

#endif
