/* The plan-only executor (plan_executor.h). */
#include <stdlib.h>
#include <string.h>

#include "streaming/job_graph.h"
#include "streaming/job_graph_codec.h"
#include "streaming/plan_executor.h"

static int
plan_execute(void *data, struct spate_env *env, struct job_graph *jg, spate_error *err)
{
    struct plan_result *r = data;
    json_t *plan;
    int rc;

    (void)env;
    if (r->graph != NULL)
        return spate_error_set(err, SPATE_ESTATE,
                               "spate_execute was called twice: a job runs one dataflow");
    if ((rc = job_graph_encode(jg, r->lib, &r->graph, &r->graph_len, err)) != 0)
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
    struct job_library *lib = NULL;
    struct executor ex;
    struct spate_env *env;
    int rc;

    memset(r, 0, sizeof *r);
    if ((rc = job_library_open(path, NULL, NULL, &lib, err)) != 0)
        return rc;
    if ((rc = job_library_require_main(lib, err)) != 0)
        goto out;
    r->lib = lib;
    ex = plan_executor(r);
    env = env_new(conf, &ex);
    env->library = lib;
    if (parallelism > 0)
        spate_env_set_parallelism(env, parallelism);
    rc = lib->main(env, argc, argv);
    if (rc != 0) {
        if (env->error.code != 0)
            *err = env->error;
        else
            spate_error_set(err, rc < 0 ? rc : SPATE_EUSER, "spate_job_main of '%s' returned %d",
                            path, rc);
        rc = err->code;
    } else if (r->graph == NULL) {
        rc = spate_error_set(err, SPATE_EINVAL,
                             "spate_job_main of '%s' returned without calling spate_execute", path);
    }
    env_free(env);
out:
    /* The graph refers to the library by hash; the plan needs no code. */
    job_library_close(lib);
    r->lib = NULL;
    if (rc != 0)
        plan_result_release(r);
    return rc;
}
