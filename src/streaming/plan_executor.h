/* The plan-only executor (Flink's OptimizerPlanEnvironment): spate_execute
 * builds the JobGraph and hands it over encoded, with its plan JSON, instead
 * of running it. Used by `spate info` and by the child process that runs a
 * job's main for POST /jars/:jarid/run (never the JobManager itself). */
#ifndef SPATE_STREAMING_PLAN_EXECUTOR_H
#define SPATE_STREAMING_PLAN_EXECUTOR_H

#include <stddef.h>
#include <stdint.h>

#include "streaming/stream_graph.h"
#include "streaming/user_code.h"

struct plan_result {
    uint8_t *graph; /* the encoded JobGraph (malloc'd) */
    size_t graph_len;
    char *plan_json;  /* the plan (malloc'd) */
    int derived_uids; /* operators without a uid */
};

/* An executor that fills r (which must outlive the execute call). */
struct executor plan_executor(struct plan_result *r);
void plan_result_release(struct plan_result *r);

/* Loads the job library at path, runs its spate_job_main(argc, argv) on an
 * environment of conf with the plan executor, and returns the plan. Errors:
 * a file that is not a job library, no spate_job_main, main failing or never
 * calling spate_execute, functions outside the library. */
int plan_from_library(const char *path, const struct config *conf, int parallelism, int argc,
                      char **argv, struct plan_result *r, spate_error *err);

#endif
