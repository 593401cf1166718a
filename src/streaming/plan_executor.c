/* The plan-only executor (plan_executor.h). */
#include <stdlib.h>
#include <string.h>

#include "streaming/job_graph.h"
#include "streaming/job_graph_codec.h"
#include "streaming/packaged_program.h"
#include "streaming/plan_executor.h"

static int
plan_execute(void *data, struct spate_env *env, struct job_graph *jg, spate_error *err)
{
    struct plan_result *r = data;
    json_t *plan;
    int rc;

    if (r->graph != NULL)
        return spate_error_set(err, SPATE_ESTATE,
                               "spate_execute was called twice: a job runs one dataflow");
    if ((rc = job_graph_encode(jg, env->library, &r->graph, &r->graph_len, err)) != 0)
        return rc;
    plan = job_graph_plan_json(jg);
    r->plan_json = json_dumps(plan, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(plan);
    r->derived_uids = jg->derived_uids;
    return 0;
}

struct executor
plan_executor(struct plan_result *r)
{
    struct executor ex = { "plan", plan_execute, r };

    return ex;
}

void
plan_result_release(struct plan_result *r)
{
    free(r->graph);
    free(r->plan_json);
    r->graph = NULL;
    r->plan_json = NULL;
}

int
plan_from_library(const char *path, const struct config *conf, int parallelism, int argc,
                  char **argv, struct plan_result *r, spate_error *err)
{
    struct executor ex = plan_executor(r);
    int rc;

    memset(r, 0, sizeof *r);
    rc = packaged_program_run(path, conf, parallelism, argc, argv, &ex, err);
    if (rc != 0)
        plan_result_release(r);
    return rc;
}
