/* Running a job library's main (packaged_program.h). */
#include "streaming/packaged_program.h"
#include "streaming/user_code.h"

int
packaged_program_run(const char *path, const struct config *conf, int parallelism, int argc,
                     char **argv, const struct executor *ex, spate_error *err)
{
    struct job_library *lib = NULL;
    struct spate_env *env;
    int rc;

    if ((rc = job_library_open(path, NULL, NULL, &lib, err)) != 0)
        return rc;
    if ((rc = job_library_require_main(lib, err)) != 0) {
        job_library_close(lib);
        return rc;
    }
    env = env_new(conf, ex);
    env->library = lib;
    if (parallelism > 0)
        spate_env_set_parallelism(env, parallelism);
    rc = lib->main(env, argc, argv);
    if (env->error.code != 0) {
        /* The first misuse, or the job's own failure, says most. */
        *err = env->error;
        rc = err->code;
    } else if (rc != 0) {
        rc = spate_error_set(err, rc < 0 ? rc : SPATE_EUSER, "spate_job_main of '%s' returned %d",
                             path, rc);
    } else if (env->executions == 0) {
        rc = spate_error_set(err, SPATE_EINVAL,
                             "spate_job_main of '%s' returned without calling spate_execute", path);
    }
    env_free(env);
    job_library_close(lib);
    return rc;
}
