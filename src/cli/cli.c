/* The spate command line (cli.h): global options, the command table, and the
 * commands that need no cluster. Runs on the main thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_cluster.h"
#include "cli/cli_config.h"
#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"

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

int
spate_cli_main(int argc, char **argv)
{
    struct cli_config_source src = { 0 };
    struct cli_context ctx = { 0 };
    const struct cli_command *cmd = NULL;
    spate_error err = { 0 };
    int i, rc;

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
