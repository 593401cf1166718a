/* The spate command line (cli.h): global options, the command table (each
 * command's usage and options, for `spate COMMAND --help` and `spate help
 * COMMAND`), and the commands that need no cluster: config, version, help
 * (whole lines, summaries wrapped at 100 columns), info (the plan as JSON)
 * and the internal job-graph (a job's main run plan-only, its JobGraph
 * written to a pipe: the JobManager's child for /jars/:jarid/run). Runs on
 * the main thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_cluster.h"
#include "cli/cli_config.h"
#include "core/secret.h"
#include "cli/cli_jobs.h"
#include "cli/cli_run.h"
#include "cli/cli_sql.h"
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

/* A command's -D and -h/--help are taken out of its arguments in one place
 * (cli_command_args), before and after its name alike, as Flink's scripts
 * do. `options` is the help's option list, one "  OPTION\tWHAT\n" a line;
 * `valued` names, for a command whose job arguments follow its own (run,
 * info), the options that take a value: -D and -h are looked for only up to
 * the job's library, so that the job's own arguments stay its own. */
struct cli_command {
    const char *name;
    int (*run)(struct cli_context *ctx);
    const char *args;
    const char *summary;
    const char *options;
    const char *const *valued;
};

static int cli_cmd_config(struct cli_context *ctx);
static int cli_cmd_info(struct cli_context *ctx);
static int cli_cmd_run(struct cli_context *ctx);
static int cli_cmd_sql(struct cli_context *ctx);
static int cli_cmd_job_graph(struct cli_context *ctx);
static int cli_cmd_list(struct cli_context *ctx);
static int cli_cmd_cancel(struct cli_context *ctx);
static int cli_cmd_stop(struct cli_context *ctx);
static int cli_cmd_savepoint(struct cli_context *ctx);
static int cli_cmd_stop_cluster(struct cli_context *ctx);
static int cli_cmd_jobmanager(struct cli_context *ctx);
static int cli_cmd_taskmanager(struct cli_context *ctx);
static int cli_cmd_help(struct cli_context *ctx);
static int cli_cmd_version(struct cli_context *ctx);

/* The helps' layout: the second column, the width lines wrap at. */
#define CLI_HELP_COLUMN 25
#define CLI_HELP_WIDTH  100

#define CLI_OPT_TARGET "  -m, --jobmanager HOST:PORT\tthe JobManager's REST address\n"

static const char *const cli_run_valued[] = {
    "-m", "--jobmanager", "-p", "--parallelism", "--json", "-s", "--fromSavepoint", NULL
};
static const char *const cli_info_valued[] = { "-p", "--parallelism", NULL };
static const char *const cli_job_graph_valued[] = { "--result-fd", "-p", "--parallelism", NULL };

static const struct cli_command cli_commands[] = {
    { "jobmanager", cli_cmd_jobmanager, "", "run a JobManager (Dispatcher, ResourceManager, REST)",
      "", NULL },
    { "taskmanager", cli_cmd_taskmanager, "[--count N]",
      "run a TaskManager (N TaskExecutors in one process for scale tests)",
      "  --count N\tTaskExecutors in this process (default 1)\n", NULL },
    { "config", cli_cmd_config, "[KEY...]", "print the effective configuration and its origins",
      "  KEY\tprint only this key's effective value\n", NULL },
    { "run", cli_cmd_run,
      "[--local | -m HOST:PORT] [-d] [-p N] [-s SAVEPOINT [-n]] [--json FILE] JOB.so [ARGS]",
      "run a job on a cluster over REST (--local: on the embedded mini cluster; -d: submit and "
      "return; -s: resume from a savepoint, -n: skipping state whose operator is gone)",
      "  --local\trun on a mini cluster inside this process\n" CLI_OPT_TARGET
      "  -d, --detached\tsubmit the job and return\n"
      "  -p, --parallelism N\tthe job's default parallelism\n"
      "  -s, --fromSavepoint PATH\tresume from a savepoint (a folder or a file: URI)\n"
      "  -n, --allowNonRestoredState\tskip state whose operator is gone\n"
      "  --json FILE\twrite the job's outcome as JSON to FILE\n"
      "  ARGS\tthe job's own arguments (after JOB.so, -D and -h are the job's)\n",
      cli_run_valued },
    { "sql", cli_cmd_sql, "[--local | -m HOST:PORT] [-p N] [-f FILE] [-e STATEMENTS]",
      "the SQL client: statements from FILE, -e or standard input (a prompt on a terminal); "
      "INSERT INTO and SELECT run as jobs",
      "  --local\trun jobs on a mini cluster inside this process\n" CLI_OPT_TARGET
      "  -p, --parallelism N\tthe jobs' default parallelism\n"
      "  -f, --file FILE\trun the statements of FILE\n"
      "  -e, --execute TEXT\trun the statements of TEXT\n",
      NULL },
    { "list", cli_cmd_list, "[-a] [-m HOST:PORT]", "list a cluster's running jobs (-a: all)",
      "  -a, --all\tlist finished jobs too\n" CLI_OPT_TARGET, NULL },
    { "cancel", cli_cmd_cancel, "[-m HOST:PORT] [-s [DIR]] JOBID",
      "cancel a job on a cluster (-s: after a savepoint into DIR)",
      CLI_OPT_TARGET "  -s, --withSavepoint [DIR]\ttake a savepoint (into DIR, else "
                     "state.savepoints.dir) first\n",
      NULL },
    { "stop", cli_cmd_stop, "[-m HOST:PORT] [--drain] [-p DIR] JOBID",
      "stop a job with a savepoint (--drain: every event-time window and timer fires first)",
      CLI_OPT_TARGET "  -d, --drain\tfire every event-time window and timer before stopping\n"
                     "  -p, --savepointPath DIR\tthe savepoint's folder (default "
                     "state.savepoints.dir)\n",
      NULL },
    { "savepoint", cli_cmd_savepoint, "[-m HOST:PORT] JOBID [DIR] | -d PATH",
      "take a savepoint of a job (into DIR, else state.savepoints.dir), or dispose of one",
      CLI_OPT_TARGET "  -d, --dispose PATH\tdispose of the savepoint at PATH\n", NULL },
    { "stop-cluster", cli_cmd_stop_cluster, "[-m HOST:PORT]",
      "stop the whole cluster: its JobManager and every TaskManager (DELETE /cluster)",
      CLI_OPT_TARGET, NULL },
    { "info", cli_cmd_info, "[-p N] JOB.so [ARGS]",
      "print the job's plan (JSON) without running it",
      "  -p, --parallelism N\tthe job's default parallelism\n", cli_info_valued },
    { "job-graph", cli_cmd_job_graph, "--result-fd FD [-p N] JOB.so [ARGS]",
      "(internal) run a job's main plan-only and write its JobGraph to FD",
      "  --result-fd FD\twhere the JobGraph and the plan go\n"
      "  -p, --parallelism N\tthe job's default parallelism\n",
      cli_job_graph_valued },
    { "version", cli_cmd_version, "", "print spate's version", "", NULL },
    { "help", cli_cmd_help, "[COMMAND]", "print this help, or a command's", "", NULL },
};

/* Prints `text` from column `col` on, wrapped at word boundaries to
 * CLI_HELP_WIDTH columns; the caller has printed `at` columns of the line. */
static void
cli_print_wrapped(FILE *out, const char *text, int at, int col)
{
    int width = CLI_HELP_WIDTH - col;

    if (at > 0 && at >= col) { /* no room for a space between: the next line */
        fputc('\n', out);
        at = 0;
    }
    fprintf(out, "%*s", col - at, "");
    while (*text != '\0') {
        int n = (int)strlen(text);

        if (n > width) {
            n = width;
            while (n > 0 && text[n] != ' ')
                n--;
            if (n == 0) /* one word longer than the line: whole */
                n = (int)strcspn(text, " ");
        }
        fprintf(out, "%.*s\n", n, text);
        text += n;
        while (*text == ' ')
            text++;
        if (*text != '\0')
            fprintf(out, "%*s", col, "");
    }
}

/* One "  LEFT  what" line of a help, LEFT whole (what moves under it when
 * LEFT is too long). */
static void
cli_print_entry(FILE *out, const char *left, int left_len, const char *what)
{
    int at = fprintf(out, "  %.*s", left_len, left);

    if (what == NULL || *what == '\0') {
        fputc('\n', out);
        return;
    }
    cli_print_wrapped(out, what, at, CLI_HELP_COLUMN);
}

/* The option list of a command's help: "  OPTION\tWHAT\n" lines. */
static void
cli_print_options(FILE *out, const char *options)
{
    while (*options != '\0') {
        const char *tab = strchr(options, '\t'), *nl = strchr(options, '\n');
        char what[256];

        SPATE_ASSERT(tab != NULL && nl != NULL && tab < nl);
        snprintf(what, sizeof what, "%.*s", (int)(nl - tab - 1), tab + 1);
        /* The two leading spaces are cli_print_entry's. */
        cli_print_entry(out, options + 2, (int)(tab - options - 2), what);
        options = nl + 1;
    }
}

static void
cli_usage(FILE *out)
{
    fprintf(out, "usage: spate [--conf-dir DIR] [-D key=value]... COMMAND [-D key=value]... "
                 "[ARGS]\n"
                 "\n"
                 "commands:\n");
    for (size_t i = 0; i < ARRAY_SIZE(cli_commands); i++) {
        const struct cli_command *c = &cli_commands[i];
        char left[256];
        int n = snprintf(left, sizeof left, "%s%s%s", c->name, c->args[0] ? " " : "", c->args);

        cli_print_entry(out, left, n, c->summary);
    }
    fprintf(out, "\n"
                 "options:\n");
    cli_print_options(out, "  --conf-dir DIR\tread DIR/config.yaml (default: $SPATE_CONF_DIR, "
                           "else conf/ beside spate)\n"
                           "  -D key=value\tset a configuration key, over the file's value "
                           "(before the command or after its name)\n"
                           "  -h, --help\tprint this help (after a command: the command's)\n"
                           "  --version\tprint spate's version\n");
    fprintf(out, "\n"
                 "environment:\n");
    cli_print_options(out, "  SPATE_CONF_DIR\tthe configuration folder\n"
                           "  SPATE_LOG_LEVEL\ttrace, debug, info, warn, error or off\n");
}

/* `spate COMMAND --help`: the command's usage, its options and the common
 * ones, as `flink savepoint --help` prints. */
static void
cli_command_usage(FILE *out, const struct cli_command *c)
{
    fprintf(out, "usage: spate %s [-D key=value]...%s%s\n\n", c->name, c->args[0] ? " " : "",
            c->args);
    cli_print_wrapped(out, c->summary, 0, 0);
    fprintf(out, "\noptions:\n");
    cli_print_options(out, c->options ? c->options : "");
    cli_print_options(out, "  -D key=value\tset a configuration key, over the file's value\n"
                           "  -h, --help\tprint this help\n");
}

static const struct cli_command *
cli_command_find(const char *name)
{
    for (size_t c = 0; c < ARRAY_SIZE(cli_commands); c++)
        if (strcmp(name, cli_commands[c].name) == 0)
            return &cli_commands[c];
    return NULL;
}

static int
cli_cmd_help(struct cli_context *ctx)
{
    const struct cli_command *c;

    if (ctx->argc < 2) {
        cli_usage(stdout);
        return 0;
    }
    if (ctx->argc > 2 || (c = cli_command_find(ctx->argv[1])) == NULL) {
        fprintf(stderr, "spate help: unknown command '%s' (try 'spate help')\n", ctx->argv[1]);
        return 2;
    }
    cli_command_usage(stdout, c);
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
    spate_error err = { 0 };

    if (secret_resolve(ctx->conf, &err) != 0) {
        fprintf(stderr, "spate jobmanager: %s\n", err.message);
        return 1;
    }
    return cli_jobmanager(ctx->conf, ctx->argc, ctx->argv);
}

static int
cli_cmd_taskmanager(struct cli_context *ctx)
{
    spate_error err = { 0 };

    if (secret_resolve(ctx->conf, &err) != 0) {
        fprintf(stderr, "spate taskmanager: %s\n", err.message);
        return 1;
    }
    return cli_taskmanager(ctx->conf, ctx->argc, ctx->argv);
}

/* A value as `spate config` shows it: secrets masked, as Flink's. */
static const char *
cli_shown(const char *key, const char *value)
{
    return config_key_is_sensitive(key) && value[0] != '\0' ? CONFIG_HIDDEN : value;
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
        printf("%s: %s  # %s\n", opt->key, cli_shown(opt->key, value), origin);
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
            printf("%s\n", cli_shown(ctx->argv[i], value));
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
            printf("%s: %s  # %s, not a spate option\n", k, cli_shown(k, v), o);
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
cli_cmd_sql(struct cli_context *ctx)
{
    return cli_sql(ctx->conf, ctx->argc, ctx->argv);
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
cli_cmd_stop_cluster(struct cli_context *ctx)
{
    return cli_stop_cluster(ctx->conf, ctx->argc, ctx->argv);
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

static bool
cli_valued(const struct cli_command *cmd, const char *a)
{
    for (const char *const *v = cmd->valued; v != NULL && *v != NULL; v++)
        if (strcmp(a, *v) == 0)
            return true;
    return false;
}

/* -D key=value (or -Dkey=value) into src, wherever at argv[*i]; 1 when it
 * was one, 0 when not, 2 (after a message) when its value is missing. */
static int
cli_take_define(int argc, char **argv, int *i, struct cli_config_source *src, const char *who)
{
    const char *a = argv[*i];

    if (strcmp(a, "-D") == 0) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "%s: -D needs key=value (try '%s --help')\n", who, who);
            return 2;
        }
        src->overrides[src->override_count++] = argv[++*i];
        return 1;
    }
    if (strncmp(a, "-D", 2) == 0 && a[2] != '\0') {
        src->overrides[src->override_count++] = a + 2;
        return 1;
    }
    return 0;
}

/* The command's own arguments (argv[0] its name), without the -D and
 * -h/--help that every command takes after its name: the -D go into src
 * after those before the name (so they win), *help says whether help was
 * asked. A command with job arguments (cmd->valued) keeps everything from
 * its first positional argument on: the job's library and its arguments. */
static int
cli_command_args(const struct cli_command *cmd, int argc, char **argv,
                 struct cli_config_source *src, char **out, int *out_argc, bool *help)
{
    char who[64];
    int n = 0, i, rc;

    snprintf(who, sizeof who, "spate %s", cmd->name);
    *help = false;
    out[n++] = argv[0];
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];

        if ((rc = cli_take_define(argc, argv, &i, src, who)) == 2)
            return 2;
        if (rc == 1)
            continue;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            *help = true;
            continue;
        }
        out[n++] = argv[i];
        if (cmd->valued == NULL)
            continue;
        if (cli_valued(cmd, a) && i + 1 < argc)
            out[n++] = argv[++i];
        else if (a[0] != '-')
            break; /* the job's library: the rest is the job's */
    }
    for (i++; i < argc; i++)
        out[n++] = argv[i];
    out[n] = NULL;
    *out_argc = n;
    return 0;
}

int
spate_cli_main(int argc, char **argv)
{
    struct cli_config_source src = { 0 };
    struct cli_context ctx = { 0 };
    const struct cli_command *cmd = NULL;
    spate_error err = { 0 };
    char **args = NULL;
    bool help;
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
        } else if ((rc = cli_take_define(argc, argv, &i, &src, "spate")) != 0) {
            if (rc == 2)
                goto out;
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
    if ((cmd = cli_command_find(argv[i])) == NULL) {
        fprintf(stderr, "spate: unknown command '%s' (try 'spate --help')\n", argv[i]);
        rc = 2;
        goto out;
    }
    args = xcalloc((size_t)(argc - i + 1), sizeof *args);
    if ((rc = cli_command_args(cmd, argc - i, argv + i, &src, args, &ctx.argc, &help)) != 0)
        goto out;
    if (help) {
        cli_command_usage(stdout, cmd);
        rc = 0;
        goto out;
    }
    if (cli_config_load(&src, &ctx.conf, &err) != 0) {
        fprintf(stderr, "spate: %s\n", err.message);
        rc = 1;
        goto out;
    }
    ctx.argv = args;
    rc = cmd->run(&ctx);
out:
    config_free(ctx.conf);
    free(args);
    free(src.overrides);
    return rc;
}
