/* Unit tests of src/core/log.c: format, levels, files, thread names. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
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

/* A line a peer can make repeat: a burst passes, the rest are counted and
 * said by the first line of the next window. */
Test(log, limited_lines_stop_at_the_burst_and_count_the_rest)
{
    char path[] = "/tmp/spate-test-log-XXXXXX";
    struct log_ratelimit rl = { 0 };
    int fd = mkstemp(path);
    spate_error err;
    char *text, *p;
    int lines = 0;

    close(fd);
    cr_assert_eq(log_open_file(path, &err), 0);
    log_set_level(LOG_LEVEL_INFO);
    for (int i = 0; i < 1000; i++)
        SPATE_LOG_LIMITED(&rl, LOG_LEVEL_WARN, "rpc", "refused connection %d", i);
    /* The next window: its first line says how many were dropped. */
    atomic_store(&rl.window_start_ms, atomic_load(&rl.window_start_ms) - LOG_RATELIMIT_WINDOW_MS);
    SPATE_LOG_LIMITED(&rl, LOG_LEVEL_WARN, "rpc", "refused connection %d", 1000);
    log_close_file();
    text = slurp(path);
    unlink(path);
    for (p = text; (p = strstr(p, "refused connection")) != NULL; p++)
        lines++;
    cr_assert_eq(lines, LOG_RATELIMIT_BURST + 1, "%s", text);
    cr_assert(strstr(text, "(980 lines like the next were not logged in the last 10 s)") != NULL,
              "%s", text);
    cr_assert(strstr(text, "refused connection 1000") != NULL);
}
