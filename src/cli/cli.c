/* The spate command line (cli.h): global options, the command table, and the
 * commands that need no cluster. Runs on the main thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_cluster.h"
#include "cli/cli_config.h"
#include "cli/cli_jobs.h"
#include "cli/cli_run.h"
#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "streaming/plan_executor.h"

/* What every command gets: its own arguments and the loaded configuration. */
struct cli_context {
    int argc;
    char **argv;
    struct config *conf;
};

struct cli_command {
    const char *name;
    int (*run)(struct cli_context *ctx);
    const char *args;
    const char *summary;
};

static int cli_cmd_config(struct cli_context *ctx);
static int cli_cmd_info(struct cli_context *ctx);
static int cli_cmd_run(struct cli_context *ctx);
static int cli_cmd_job_graph(struct cli_context *ctx);
static int cli_cmd_list(struct cli_context *ctx);
static int cli_cmd_cancel(struct cli_context *ctx);
static int cli_cmd_stop(struct cli_context *ctx);
static int cli_cmd_savepoint(struct cli_context *ctx);
static int cli_cmd_jobmanager(struct cli_context *ctx);
static int cli_cmd_taskmanager(struct cli_context *ctx);
static int cli_cmd_test_job(struct cli_context *ctx);
static int cli_cmd_help(struct cli_context *ctx);
static int cli_cmd_version(struct cli_context *ctx);

static const struct cli_command cli_commands[] = {
    { "jobmanager", cli_cmd_jobmanager, "",
      "run a JobManager (Dispatcher, ResourceManager, REST)" },
    { "taskmanager", cli_cmd_taskmanager, "[--count N]",
      "run a TaskManager (N TaskExecutors in one process for scale tests)" },
    { "test-job", cli_cmd_test_job, "--slots N [--run-ms MS]",
      "submit the test-only job that asks for N slots" },
    { "config", cli_cmd_config, "[KEY...]", "print the effective configuration and its origins" },
    { "run", cli_cmd_run,
      "[--local | -m HOST:PORT] [-d] [-p N] [-s SAVEPOINT [-n]] [--json FILE] JOB.so [ARGS]",
      "run a job on a cluster over REST (--local: on the embedded mini cluster; -d: submit and "
      "return; -s: resume from a savepoint, -n: skipping state whose operator is gone)" },
    { "list", cli_cmd_list, "[-a] [-m HOST:PORT]", "list a cluster's running jobs (-a: all)" },
    { "cancel", cli_cmd_cancel, "[-m HOST:PORT] [-s [DIR]] JOBID",
      "cancel a job on a cluster (-s: after a savepoint into DIR)" },
    { "stop", cli_cmd_stop, "[-m HOST:PORT] [--drain] [-p DIR] JOBID",
      "stop a job with a savepoint (--drain: every event-time window and timer fires first)" },
    { "savepoint", cli_cmd_savepoint, "[-m HOST:PORT] JOBID [DIR] | -d PATH",
      "take a savepoint of a job (into DIR, else state.savepoints.dir), or dispose of one" },
    { "info", cli_cmd_info, "[-p N] JOB.so [ARGS]",
      "print the job's plan (JSON) without running it" },
    { "job-graph", cli_cmd_job_graph, "--result-fd FD [-p N] JOB.so [ARGS]",
      "(internal) run a job's main plan-only and write its JobGraph to FD" },
    { "version", cli_cmd_version, "", "print spate's version" },
    { "help", cli_cmd_help, "", "print this help" },
};

static void
cli_usage(FILE *out)
{
    fprintf(out, "usage: spate [--conf-dir DIR] [-D key=value]... COMMAND [ARGS]\n"
                 "\n"
                 "commands:\n");
    for (size_t i = 0; i < ARRAY_SIZE(cli_commands); i++) {
        char left[64];

        snprintf(left, sizeof left, "%s %s", cli_commands[i].name, cli_commands[i].args);
        fprintf(out, "  %-22s %s\n", left, cli_commands[i].summary);
    }
    fprintf(out, "\n"
                 "options:\n"
                 "  --conf-dir DIR         read DIR/config.yaml (default: $SPATE_CONF_DIR, "
                 "else conf/ beside spate)\n"
                 "  -D key=value           set a configuration key, over the file's value\n"
                 "  -h, --help             print this help\n"
                 "  --version              print spate's version\n"
                 "\n"
                 "environment:\n"
                 "  SPATE_CONF_DIR         the configuration folder\n"
                 "  SPATE_LOG_LEVEL        trace, debug, info, warn, error or off\n");
}

static int
cli_cmd_help(struct cli_context *ctx)
{
    UNUSED(ctx);
    cli_usage(stdout);
    return 0;
}

static int
cli_cmd_version(struct cli_context *ctx)
{
    UNUSED(ctx);
    printf("spate %s\n", SPATE_VERSION);
    return 0;
}

static int
cli_cmd_jobmanager(struct cli_context *ctx)
{
    return cli_jobmanager(ctx->conf, ctx->argc, ctx->argv);
}

static int
cli_cmd_taskmanager(struct cli_context *ctx)
{
    return cli_taskmanager(ctx->conf, ctx->argc, ctx->argv);
}

static int
cli_cmd_test_job(struct cli_context *ctx)
{
    return cli_test_job(ctx->conf, ctx->argc, ctx->argv);
}

/* One option's effective value and origin, as `spate config` prints it. */
static void
cli_print_option(const struct config *conf, const struct config_option *opt)
{
    const char *value, *origin;

    config_effective(conf, opt, &value, &origin);
    if (value == NULL)
        printf("# %s: (unset)\n", opt->key);
    else
        printf("%s: %s  # %s\n", opt->key, value, origin);
}

static int
cli_cmd_config(struct cli_context *ctx)
{
    if (ctx->argc > 1) {
        for (int i = 1; i < ctx->argc; i++) {
            const struct config_option *opt = config_option_find(ctx->argv[i]);
            const char *value = config_lookup(ctx->conf, ctx->argv[i]);
            const char *origin;

            if (value == NULL && opt != NULL)
                config_effective(ctx->conf, opt, &value, &origin);
            if (value == NULL) {
                fprintf(stderr, "spate config: key '%s' is not set%s\n", ctx->argv[i],
                        opt ? "" : " and is not a spate option");
                return 1;
            }
            printf("%s\n", value);
        }
        return 0;
    }
    printf("# configuration from %s\n", cli_config_dir() ? cli_config_dir() : "(no folder)");
    for (size_t i = 0; i < CONFIG_OPTION_COUNT; i++)
        cli_print_option(ctx->conf, &config_options[i]);
    for (size_t i = 0; i < config_count(ctx->conf); i++) {
        const char *k, *v, *o;

        config_entry(ctx->conf, i, &k, &v, &o);
        if (config_option_find(k) == NULL)
            printf("%s: %s  # %s, not a spate option\n", k, v, o);
    }
    return 0;
}

/* Parses "[-p N] JOB.so [ARGS]" of run-like commands: *job is the index of
 * JOB.so in ctx->argv. */
static int
cli_job_args(struct cli_context *ctx, int *parallelism, int *job)
{
    int i = 1;

    *parallelism = 0;
    for (; i < ctx->argc && ctx->argv[i][0] == '-'; i++) {
        if ((strcmp(ctx->argv[i], "-p") == 0 || strcmp(ctx->argv[i], "--parallelism") == 0) &&
            i + 1 < ctx->argc) {
            char *end;
            long p = strtol(ctx->argv[++i], &end, 10);

            if (*end != '\0' || p < 1 || p > 32768) {
                fprintf(stderr, "spate %s: parallelism '%s' is not a number from 1 to 32768\n",
                        ctx->argv[0], ctx->argv[i]);
                return 2;
            }
            *parallelism = (int)p;
        } else {
            fprintf(stderr, "spate %s: unknown option '%s'\n", ctx->argv[0], ctx->argv[i]);
            return 2;
        }
    }
    if (i >= ctx->argc) {
        fprintf(stderr, "spate %s: which job? usage: spate %s [-p N] JOB.so [ARGS]\n", ctx->argv[0],
                ctx->argv[0]);
        return 2;
    }
    *job = i;
    return 0;
}

static int
cli_cmd_run(struct cli_context *ctx)
{
    return cli_run(ctx->conf, ctx->argc, ctx->argv);
}

static int
cli_cmd_list(struct cli_context *ctx)
{
    return cli_list(ctx->conf, ctx->argc, ctx->argv);
}

static int
cli_cmd_cancel(struct cli_context *ctx)
{
    return cli_cancel(ctx->conf, ctx->argc, ctx->argv);
}

static int
cli_cmd_stop(struct cli_context *ctx)
{
    return cli_stop(ctx->conf, ctx->argc, ctx->argv);
}

static int
cli_cmd_savepoint(struct cli_context *ctx)
{
    return cli_savepoint(ctx->conf, ctx->argc, ctx->argv);
}

static int
cli_cmd_info(struct cli_context *ctx)
{
    struct plan_result plan;
    spate_error err = { 0 };
    int parallelism, job, rc;

    if ((rc = cli_job_args(ctx, &parallelism, &job)) != 0)
        return rc;
    if (plan_from_library(ctx->argv[job], ctx->conf, parallelism, ctx->argc - job, ctx->argv + job,
                          &plan, &err) != 0) {
        fprintf(stderr, "spate info: %s\n", err.message);
        return 1;
    }
    printf("%s\n", plan.plan_json);
    plan_result_release(&plan);
    return 0;
}

/* The JobManager's child for /jars/:jarid/run and /plan: the job's main
 * runs here, never in the JobManager. Writes, to the result fd, the
 * encoded JobGraph and the plan, each after its 8-byte big-endian length. */
static int
cli_cmd_job_graph(struct cli_context *ctx)
{
    struct plan_result plan;
    spate_error err = { 0 };
    int parallelism, job, rc, fd;
    char *end;
    FILE *out;

    if (ctx->argc < 3 || strcmp(ctx->argv[1], "--result-fd") != 0 ||
        (fd = (int)strtol(ctx->argv[2], &end, 10)) < 0 || *end != '\0') {
        fprintf(stderr, "spate job-graph: usage: spate job-graph --result-fd FD [-p N] JOB.so "
                        "[ARGS]\n");
        return 2;
    }
    ctx->argc -= 2;
    ctx->argv += 2;
    if ((rc = cli_job_args(ctx, &parallelism, &job)) != 0)
        return rc;
    if ((out = fdopen(fd, "w")) == NULL) {
        fprintf(stderr, "spate job-graph: cannot write to fd %d\n", fd);
        return 1;
    }
    if (plan_from_library(ctx->argv[job], ctx->conf, parallelism, ctx->argc - job, ctx->argv + job,
                          &plan, &err) != 0) {
        fprintf(stderr, "spate job-graph: %s\n", err.message);
        fclose(out);
        return 1;
    }
    {
        size_t plen = strlen(plan.plan_json);
        uint8_t a[8], b[8];

        for (int i = 0; i < 8; i++) {
            a[i] = (uint8_t)((uint64_t)plan.graph_len >> (56 - 8 * i));
            b[i] = (uint8_t)((uint64_t)plen >> (56 - 8 * i));
        }
        rc = fwrite(a, 1, 8, out) != 8 ||
             fwrite(plan.graph, 1, plan.graph_len, out) != plan.graph_len ||
             fwrite(b, 1, 8, out) != 8 || fwrite(plan.plan_json, 1, plen, out) != plen;
    }
    plan_result_release(&plan);
    if (fclose(out) != 0 || rc != 0) {
        fprintf(stderr, "spate job-graph: cannot write the JobGraph to fd %d\n", fd);
        return 1;
    }
    return 0;
}

int
spate_cli_main(int argc, char **argv)
{
    struct cli_config_source src = { 0 };
    struct cli_context ctx = { 0 };
    const struct cli_command *cmd = NULL;
    spate_error err = { 0 };
    int i, rc;

    alloc_init_process();
    src.overrides = xcalloc((size_t)argc, sizeof *src.overrides);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cli_usage(stdout);
            rc = 0;
            goto out;
        } else if (strcmp(a, "--version") == 0) {
            rc = cli_cmd_version(&ctx);
            goto out;
        } else if (strcmp(a, "--conf-dir") == 0 && i + 1 < argc) {
            src.conf_dir = argv[++i];
        } else if (strncmp(a, "--conf-dir=", 11) == 0) {
            src.conf_dir = a + 11;
        } else if (strcmp(a, "-D") == 0 && i + 1 < argc) {
            src.overrides[src.override_count++] = argv[++i];
        } else if (strncmp(a, "-D", 2) == 0 && a[2] != '\0') {
            src.overrides[src.override_count++] = a + 2;
        } else if (a[0] == '-') {
            fprintf(stderr, "spate: unknown option '%s' (try 'spate --help')\n", a);
            rc = 2;
            goto out;
        } else {
            break;
        }
    }
    if (i == argc) {
        cli_usage(stderr);
        rc = 2;
        goto out;
    }
    for (size_t c = 0; c < ARRAY_SIZE(cli_commands); c++)
        if (strcmp(argv[i], cli_commands[c].name) == 0)
            cmd = &cli_commands[c];
    if (cmd == NULL) {
        fprintf(stderr, "spate: unknown command '%s' (try 'spate --help')\n", argv[i]);
        rc = 2;
        goto out;
    }
    if (cli_config_load(&src, &ctx.conf, &err) != 0) {
        fprintf(stderr, "spate: %s\n", err.message);
        rc = 1;
        goto out;
    }
    ctx.argc = argc - i;
    ctx.argv = argv + i;
    rc = cmd->run(&ctx);
out:
    config_free(ctx.conf);
    free(src.overrides);
    return rc;
}
