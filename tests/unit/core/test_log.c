/* Unit tests of src/core/log.c: format, levels, files, thread names. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"

static char *
slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    static char buf[65536];
    size_t n;

    cr_assert_not_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

Test(log, lines_carry_time_level_thread_component)
{
    char path[] = "/tmp/spate-test-log-XXXXXX";
    int fd = mkstemp(path);
    spate_error err;
    char *text;

    close(fd);
    cr_assert_eq(log_open_file(path, &err), 0);
    log_set_level(LOG_LEVEL_INFO);
    log_set_thread_name("rpc");
    SPATE_LOG_INFO("dispatcher", "job %s submitted", "ab12");
    SPATE_LOG_DEBUG("dispatcher", "hidden at info");
    SPATE_LOG_ERROR("slotpool", "slot request failed job=%s", "cd34");
    log_close_file();
    text = slurp(path);
    cr_assert(strstr(text, "INFO  [rpc] dispatcher: job ab12 submitted\n") != NULL, "%s", text);
    cr_assert(strstr(text, "hidden") == NULL);
    cr_assert(strstr(text, "ERROR [rpc] slotpool: slot request failed job=cd34\n") != NULL);
    /* 2026-11-29T15:44:25.123Z */
    cr_assert_eq(text[4], '-');
    cr_assert_eq(text[10], 'T');
    cr_assert_eq(text[23], 'Z');
    unlink(path);
}

static void *
log_from_another_thread(void *arg)
{
    (void)arg;
    SPATE_LOG_INFO("network", "no fields here");
    return NULL;
}

Test(log, a_threads_fields_prefix_its_lines_only)
{
    char path[] = "/tmp/spate-test-log-XXXXXX";
    int fd = mkstemp(path);
    spate_error err;
    pthread_t other;
    char *text;

    close(fd);
    cr_assert_eq(log_open_file(path, &err), 0);
    log_set_level(LOG_LEVEL_INFO);
    log_set_thread_name("Window 2");
    log_set_thread_fields("job=%s task=%s", "ab12", "cd34");
    cr_assert_str_eq(log_thread_fields(), "job=ab12 task=cd34");
    SPATE_LOG_INFO("streaming", "checkpoint %d declined", 7);
    cr_assert_eq(pthread_create(&other, NULL, log_from_another_thread, NULL), 0);
    pthread_join(other, NULL);
    log_set_thread_fields(NULL);
    SPATE_LOG_INFO("streaming", "cleared");
    log_close_file();
    text = slurp(path);
    cr_assert(strstr(text, "[Window 2] streaming: job=ab12 task=cd34 checkpoint 7 declined\n") !=
                  NULL,
              "%s", text);
    cr_assert(strstr(text, "network: no fields here\n") != NULL, "%s", text);
    cr_assert(strstr(text, "streaming: cleared\n") != NULL, "%s", text);
    unlink(path);
}

Test(log, parse_level)
{
    enum log_level l;
    spate_error err;

    cr_assert_eq(log_parse_level("DEBUG", &l, &err), 0);
    cr_assert_eq(l, LOG_LEVEL_DEBUG);
    cr_assert_eq(log_parse_level("warning", &l, &err), 0);
    cr_assert_eq(l, LOG_LEVEL_WARN);
    cr_assert_eq(log_parse_level("loud", &l, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "unknown log level 'loud'") != NULL);
}

Test(log, long_lines_are_cut_and_end_with_newline)
{
    char path[] = "/tmp/spate-test-log-XXXXXX";
    int fd = mkstemp(path);
    char big[5000];
    spate_error err;
    char *text;

    close(fd);
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cr_assert_eq(log_open_file(path, &err), 0);
    SPATE_LOG_WARN("test", "%s", big);
    log_close_file();
    text = slurp(path);
    cr_assert_lt(strlen(text), 2100);
    cr_assert_eq(text[strlen(text) - 1], '\n');
    cr_assert(strstr(text, "...\n") != NULL);
    unlink(path);
}

Test(log, unopenable_file_is_an_error)
{
    spate_error err;

    cr_assert_neq(log_open_file("/proc/spate/nope.log", &err), 0);
    cr_assert(strstr(err.message, "cannot open log file") != NULL);
}

Test(log, assert_aborts_with_location, .signal = SIGABRT)
{
    log_set_fd(open("/dev/null", O_WRONLY));
    SPATE_ASSERT(1 + 1 == 3);
}

Test(log, a_thread_name_is_the_os_thread_name_too)
{
    char got[16];

    log_set_thread_name("Window 12345678901");
    cr_assert_eq(pthread_getname_np(pthread_self(), got, sizeof got), 0);
    cr_assert_str_eq(got, "Window 12345678", "the kernel's 15 bytes of the name");
}

/* Writes n limited lines "refused connection i" through rl into a log file,
 * then, with next_window, one more in the next window; returns the file's
 * text and its count of such lines. */
static char *
limited_lines(struct log_ratelimit *rl, int n, bool next_window, int *lines)
{
    char path[] = "/tmp/spate-test-log-XXXXXX";
    int fd = mkstemp(path);
    spate_error err;
    char *text, *p;

    close(fd);
    cr_assert_eq(log_open_file(path, &err), 0);
    log_set_level(LOG_LEVEL_INFO);
    for (int i = 0; i < n; i++)
        SPATE_LOG_LIMITED(rl, LOG_LEVEL_WARN, "rpc", "refused connection %d", i);
    if (next_window) {
        atomic_store(&rl->window_start_ms,
                     atomic_load(&rl->window_start_ms) - LOG_RATELIMIT_WINDOW_MS);
        SPATE_LOG_LIMITED(rl, LOG_LEVEL_WARN, "rpc", "refused connection %d", n);
    }
    log_close_file();
    text = slurp(path);
    unlink(path);
    *lines = 0;
    for (p = text; (p = strstr(p, "refused connection")) != NULL; p++)
        (*lines)++;
    return text;
}

/* A line a peer can make repeat: a burst passes, the rest are counted and
 * said by the first line of the next window. */
Test(log, limited_lines_stop_at_the_burst_and_count_the_rest)
{
    struct log_ratelimit rl = { 0 };
    int lines;
    char *text = limited_lines(&rl, 1000, true, &lines);

    cr_assert_eq(lines, LOG_RATELIMIT_BURST + 1, "%s", text);
    cr_assert(strstr(text, "(980 lines like the next were not logged in the last 10 s)") != NULL,
              "%s", text);
    cr_assert(strstr(text, "refused connection 1000") != NULL);
}

/* A limiter of its own burst (the RPC access log's, per peer). */
Test(log, a_limiter_with_its_own_burst_keeps_that_many)
{
    struct log_ratelimit rl = { .burst = 3 };
    int lines;
    char *text = limited_lines(&rl, 50, false, &lines);

    cr_assert_eq(lines, 3, "%s", text);
    cr_assert_eq(atomic_load(&rl.suppressed), 47);
}

/* Lines of "line N" in path (0 when it does not exist); their numbers
 * marked in seen. */
static int
count_lines(const char *path, bool *seen, int max)
{
    FILE *f = fopen(path, "r");
    char buf[512];
    int n = 0, k;

    if (f == NULL)
        return 0;
    while (fgets(buf, sizeof buf, f) != NULL) {
        const char *at = strstr(buf, "line ");

        if (at != NULL && sscanf(at, "line %d", &k) == 1 && k >= 0 && k < max) {
            cr_assert(!seen[k], "line %d twice", k);
            seen[k] = true;
            n++;
        }
    }
    fclose(f);
    return n;
}

typedef struct {
    int from, count;
} writer_arg;

static void *
roll_writer(void *arg)
{
    writer_arg *w = arg;

    for (int i = w->from; i < w->from + w->count; i++)
        SPATE_LOG_INFO("roll", "line %d", i);
    return NULL;
}

Test(log, the_file_rolls_over_at_its_size_and_keeps_ten, .timeout = 60)
{
    char dir[] = "/tmp/spate-test-logroll-XXXXXX";
    char path[128], other[160];
    enum { LINES = 4000 };
    static bool seen[LINES];
    pthread_t t[2];
    writer_arg w[2] = { { 0, LINES / 2 }, { LINES / 2, LINES / 2 } };
    spate_error err = { 0 };
    struct stat st;
    int total = 0;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/jm.log", dir);
    cr_assert_eq(log_open_file(path, &err), 0, "%s", err.message);
    log_set_level(LOG_LEVEL_INFO);
    /* ~75 bytes a line, 4000 lines: about 300 KB over 64 KB files, so four
     * rolls; two threads log at once. */
    log_set_max_size(64 * 1024);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, roll_writer, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    log_close_file();
    log_set_max_size(0);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_lt(st.st_size, 64 * 1024 + 512);
    total += count_lines(path, seen, LINES);
    for (int i = 1; i <= LOG_FILE_BACKUPS + 1; i++) {
        snprintf(other, sizeof other, "%s.%d", path, i);
        if (i <= 3)
            cr_assert_eq(stat(other, &st), 0, "no %s", other);
        if (stat(other, &st) == 0)
            cr_assert_leq(st.st_size, 64 * 1024 + 512, "%s: %lld bytes", other,
                          (long long)st.st_size);
        total += count_lines(other, seen, LINES);
    }
    /* Every line in exactly one file: none lost, none twice. */
    cr_assert_eq(total, LINES);
    /* Appending, and keeping only ten: 40 more rolls of small files. */
    cr_assert_eq(log_open_file(path, &err), 0, "%s", err.message);
    log_set_max_size(100);
    for (int i = 0; i < 40; i++)
        SPATE_LOG_INFO("roll", "again %d", i);
    log_close_file();
    log_set_max_size(0);
    snprintf(other, sizeof other, "%s.%d", path, LOG_FILE_BACKUPS);
    cr_assert_eq(stat(other, &st), 0, "no %s", other);
    snprintf(other, sizeof other, "%s.%d", path, LOG_FILE_BACKUPS + 1);
    cr_assert_neq(stat(other, &st), 0, "%s is one too many", other);
    snprintf(other, sizeof other, "rm -rf '%s'", dir);
    cr_assert_eq(system(other), 0);
}
