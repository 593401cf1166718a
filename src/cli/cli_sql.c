/* `spate sql` (cli_sql.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>

#include "cli/cli_run.h"
#include "cli/cli_sql.h"
#include "core/alloc.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/util.h"
#include "sql/sql_parser.h"
#include "sql/sql_session.h"

static int
usage(void)
{
    fprintf(stderr, "usage: spate sql [--local | -m HOST:PORT] [-p N] [-f FILE] [-e "
                    "STATEMENTS]\n");
    return 2;
}

static char *
read_all(FILE *f)
{
    size_t len = 0, cap = 4096;
    char *buf = xmalloc(cap);
    size_t n;

    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2)
            buf = xrealloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    return buf;
}

/* Runs text; an error is printed, the session goes on. */
static int
run_text(struct sql_session *s, const char *text)
{
    spate_error err = { 0 };
    int rc = sql_session_run(s, text, &err);

    if (rc != 0)
        fprintf(stderr, "[ERROR] %s\n", err.message);
    return rc;
}

/* The prompt's history: ~/.spate_sql_history, at most this many entries. */
#define HISTORY_MAX 1000

static char *
history_path(void)
{
    const char *home = getenv("HOME");
    char *path;

    if (home == NULL || *home == '\0')
        return NULL;
    path = xmalloc(strlen(home) + 24);
    sprintf(path, "%s/.spate_sql_history", home);
    return path;
}

/* A statement into the history as one line (its lines joined by spaces),
 * so that recalling it brings the whole statement back. */
static void
remember(const char *text, size_t len)
{
    char *line = xstrndup(text, len);

    size_t n = strlen(line);

    for (char *q = line; *q; q++)
        if (*q == '\n' || *q == '\r' || *q == '\t')
            *q = ' ';
    while (n > 0 && line[n - 1] == ' ')
        line[--n] = '\0';
    if (!sql_is_blank(line, n))
        add_history(line);
    free(line);
}

/* Reads statements at a prompt with libedit (line editing, the history of
 * earlier sessions): lines gather until one ends a statement with ';'
 * outside quotes; each complete script runs. */
static int
prompt(struct sql_session *s)
{
    char *buf = NULL, *line, *hist = history_path();
    size_t len = 0;
    int failed = 0;

    using_history();
    stifle_history(HISTORY_MAX);
    if (hist != NULL)
        read_history(hist);
    for (;;) {
        struct sql_stmt_text *st;
        size_t n_line;
        int n;

        if ((line = readline(len == 0 ? "spate sql> " : "        -> ")) == NULL)
            break;
        n_line = strlen(line);
        buf = xrealloc(buf, len + n_line + 2);
        memcpy(buf + len, line, n_line);
        len += n_line;
        buf[len++] = '\n';
        buf[len] = '\0';
        free(line);
        /* Complete when the last statement ends with ';' (what follows it
         * is blank). */
        sql_split(buf, &st, &n);
        if (n > 0) {
            size_t end = st[n - 1].offset + st[n - 1].len;

            if (end < len && buf[end] == ';' && sql_is_blank(buf + end + 1, len - end - 1)) {
                remember(buf, len);
                failed |= run_text(s, buf) != 0;
                len = 0;
            }
        } else if (sql_is_blank(buf, len)) {
            len = 0;
        }
        free(st);
        if (len == 0 && buf != NULL)
            buf[0] = '\0';
    }
    fputc('\n', stdout);
    if (len > 0 && !sql_is_blank(buf, len)) {
        remember(buf, len);
        failed |= run_text(s, buf) != 0;
    }
    if (hist != NULL && write_history(hist) != 0)
        fprintf(stderr, "[WARN] cannot write the history to '%s': %s\n", hist, strerror(errno));
    free(hist);
    free(buf);
    return failed;
}

int
cli_sql(const struct config *conf, int argc, char **argv)
{
    const char *file = NULL, *text = NULL, *target = NULL;
    struct sql_session_options so = { 0 };
    struct cli_job_executor *x;
    struct sql_session *s;
    bool local = false;
    int parallelism = 0, rc = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "--local") == 0) {
            local = true;
        } else if ((strcmp(a, "-m") == 0 || strcmp(a, "--jobmanager") == 0) && i + 1 < argc) {
            target = argv[++i];
        } else if ((strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) && i + 1 < argc) {
            file = argv[++i];
        } else if ((strcmp(a, "-e") == 0 || strcmp(a, "--execute") == 0) && i + 1 < argc) {
            text = argv[++i];
        } else if ((strcmp(a, "-p") == 0 || strcmp(a, "--parallelism") == 0) && i + 1 < argc) {
            char *end;
            long p = strtol(argv[++i], &end, 10);

            if (*end != '\0' || p < 1 || p > 32768) {
                fprintf(stderr, "spate sql: parallelism '%s' is not a number from 1 to 32768\n",
                        argv[i]);
                return 2;
            }
            parallelism = (int)p;
        } else {
            fprintf(stderr, "spate sql: unknown option '%s'\n", a);
            return usage();
        }
    }
    if (local && target != NULL) {
        fprintf(stderr, "spate sql: --local runs jobs in this process: it takes no -m\n");
        return 2;
    }
    if (getenv("SPATE_LOG_LEVEL") == NULL && !config_is_set(conf, CFG(LOG_LEVEL)))
        log_set_level(LOG_LEVEL_WARN);
    x = cli_job_executor_new(conf, local, target, parallelism);
    so.conf = conf;
    so.executor = cli_job_executor_get(x);
    so.out = stdout;
    so.remote = cli_job_executor_remote(x);
    s = sql_session_new(&so);
    if (parallelism > 0) {
        char p[16];
        spate_error err = { 0 };
        char *set;

        snprintf(p, sizeof p, "%d", parallelism);
        /* -p: the session's parallelism.default, as SET would make it. */
        set = xasprintf("SET 'parallelism.default' = '%s';", p);
        sql_session_run(s, set, &err);
        free(set);
    }
    if (file != NULL) {
        FILE *f = fopen(file, "r");
        char *script;

        if (f == NULL) {
            fprintf(stderr, "spate sql: cannot open '%s': %s\n", file, spate_strerror(-errno));
            rc = 1;
            goto out;
        }
        script = read_all(f);
        fclose(f);
        rc = run_text(s, script) != 0;
        free(script);
        if (rc != 0)
            goto out;
    }
    if (text != NULL) {
        rc = run_text(s, text) != 0;
    } else if (file == NULL) {
        if (isatty(STDIN_FILENO)) {
            rc = prompt(s);
        } else {
            char *script = read_all(stdin);

            rc = run_text(s, script) != 0;
            free(script);
        }
    }
    if (rc == 0 && sql_session_in_set(s)) {
        fprintf(stderr, "[ERROR] a statement set was not ended: END runs it\n");
        rc = 1;
    }
out:
    sql_session_free(s);
    cli_job_executor_free(x);
    return rc == 0 ? 0 : 1;
}
