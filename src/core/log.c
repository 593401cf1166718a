/* Logging (log.h). Lines are formatted into a stack buffer and written with one
 * write(2); the file descriptor is swapped atomically, so any thread may log
 * while another opens the log file. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"

_Atomic int log_threshold = LOG_LEVEL_INFO;

/* The descriptor lines go to; relaxed loads suffice, a line racing a swap goes
 * to either descriptor and the old one stays open until log_close_file. */
static _Atomic int log_fd = 2;
static _Atomic int log_owned_fd = -1;
/* Rolling over: the owned file's path, its size as written since opened or
 * rolled (relaxed adds: it only says when to roll), the size it rolls at (0:
 * never), and the lock a thread that rolls holds. A roll puts the new
 * file under the owned descriptor's number with dup3, so a line racing it
 * goes to the old file or the new one, never to a closed descriptor. */
static char log_path[4096];
static _Atomic int64_t log_written;
static _Atomic int64_t log_max_bytes;
static pthread_mutex_t log_roll_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local char log_thread_name[16];
/* The thread's job=/task= fields, prefixed to every message it logs. */
static _Thread_local char log_thread_fields_buf[96];
/* The fields the thread's lines carry now: its own, or those of the scope
 * it runs in (an RPC endpoint's, log_enter_fields). */
static _Thread_local const char *log_fields_now;

static const char *const log_level_names[] = { "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF" };

void
log_set_level(enum log_level level)
{
    atomic_store_explicit(&log_threshold, (int)level, memory_order_relaxed);
}

const char *
log_level_name(enum log_level level)
{
    if ((unsigned)level > LOG_LEVEL_OFF)
        return "?";
    return log_level_names[level];
}

int
log_parse_level(const char *text, enum log_level *level, spate_error *err)
{
    for (int i = 0; i <= LOG_LEVEL_OFF; i++) {
        if (strcasecmp(text, log_level_names[i]) == 0) {
            *level = (enum log_level)i;
            return 0;
        }
    }
    if (strcasecmp(text, "warning") == 0) {
        *level = LOG_LEVEL_WARN;
        return 0;
    }
    return spate_error_set(err, SPATE_EINVAL,
                           "unknown log level '%s' (expected trace, debug, info, warn, error, off)",
                           text);
}

void
log_set_fd(int fd)
{
    atomic_store_explicit(&log_fd, fd, memory_order_relaxed);
}

static int
log_mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            *p = '/';
            return -errno;
        }
        *p = '/';
    }
    return 0;
}

int
log_open_file(const char *path, spate_error *err)
{
    char dir[4096];
    int fd;

    snprintf(dir, sizeof dir, "%s", path);
    log_mkdirs(dir);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return spate_error_set(err, -errno, "cannot open log file '%s': %s", path,
                               spate_strerror(-errno));
    log_close_file();
    pthread_mutex_lock(&log_roll_lock);
    snprintf(log_path, sizeof log_path, "%s", path);
    pthread_mutex_unlock(&log_roll_lock);
    {
        struct stat st;

        atomic_store(&log_written, fstat(fd, &st) == 0 ? (int64_t)st.st_size : 0);
    }
    atomic_store(&log_owned_fd, fd);
    log_set_fd(fd);
    return 0;
}

void
log_set_max_size(int64_t max_bytes)
{
    atomic_store(&log_max_bytes, max_bytes > 0 ? max_bytes : 0);
}

/* Rolls the owned file over when it is full: one thread does it. */
static void
log_roll(void)
{
    char from[4200], to[4200];
    int owned, fd, e = 0;

    /* The others wait the few calls a roll takes, then find it done: a
     * roll that let them write on could be held up (its thread preempted)
     * while they wrote past the size many times over. */
    pthread_mutex_lock(&log_roll_lock);
    owned = atomic_load(&log_owned_fd);
    if (owned < 0 || atomic_load(&log_written) < atomic_load(&log_max_bytes)) {
        pthread_mutex_unlock(&log_roll_lock);
        return;
    }
    for (int i = LOG_FILE_BACKUPS - 1; i >= 1; i--) {
        snprintf(from, sizeof from, "%s.%d", log_path, i);
        snprintf(to, sizeof to, "%s.%d", log_path, i + 1);
        rename(from, to); /* a missing one is no error */
    }
    snprintf(to, sizeof to, "%s.1", log_path);
    fd = rename(log_path, to) == 0 ? open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
                                   : -1;
    if (fd >= 0) {
        dup3(fd, owned, O_CLOEXEC);
        close(fd);
    } else {
        e = errno;
    }
    /* Failed, the file goes on growing: the next try after as many bytes. */
    atomic_store(&log_written, 0);
    pthread_mutex_unlock(&log_roll_lock);
    if (fd < 0)
        SPATE_LOG_WARN("log", "cannot roll the log file '%s' over: %s", log_path, strerror(e));
}

void
log_close_file(void)
{
    int old = atomic_exchange(&log_owned_fd, -1);

    if (old >= 0) {
        log_set_fd(2);
        close(old);
    }
}

void
log_set_thread_fields(const char *fmt, ...)
{
    va_list ap;

    log_fields_now = log_thread_fields_buf;
    if (fmt == NULL) {
        log_thread_fields_buf[0] = '\0';
        return;
    }
    va_start(ap, fmt);
    if (vsnprintf(log_thread_fields_buf, sizeof log_thread_fields_buf, fmt, ap) < 0)
        log_thread_fields_buf[0] = '\0';
    va_end(ap);
}

const char *
log_enter_fields(const char *fields)
{
    const char *prev = log_fields_now;

    log_fields_now = fields;
    return prev;
}

void
log_leave_fields(const char *prev)
{
    log_fields_now = prev;
}

const char *
log_thread_fields(void)
{
    return log_fields_now != NULL ? log_fields_now : "";
}

void
log_set_thread_name(const char *name)
{
    char os_name[16]; /* the kernel keeps 15 bytes */

    snprintf(log_thread_name, sizeof log_thread_name, "%s", name);
    snprintf(os_name, sizeof os_name, "%s", name);
    pthread_setname_np(pthread_self(), os_name);
}

void
log_writev(enum log_level level, const char *component, const char *fmt, va_list ap)
{
    char line[2048];
    struct timespec ts;
    struct tm tm;
    size_t n;
    int len;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    len = snprintf(line + n, sizeof line - n, ".%03ldZ %-5s [%s] %s: ", ts.tv_nsec / 1000000,
                   log_level_name(level), log_thread_name[0] ? log_thread_name : "main", component);
    n += (size_t)len;
    if (log_fields_now != NULL && log_fields_now[0] != '\0') {
        len = snprintf(line + n, sizeof line - n, "%s ", log_fields_now);
        n += (size_t)len;
    }
    len = vsnprintf(line + n, sizeof line - n, fmt, ap);
    if (len < 0)
        len = 0;
    n += (size_t)len;
    if (n > sizeof line - 2) {
        n = sizeof line - 5;
        memcpy(line + n, "...", 3);
        n += 3;
    }
    line[n++] = '\n';
    /* One write per line: lines from threads and processes never interleave. */
    if (write(atomic_load_explicit(&log_fd, memory_order_relaxed), line, n) < 0) {
        /* Nowhere left to report it. */
    }
    if (atomic_load_explicit(&log_max_bytes, memory_order_relaxed) > 0 &&
        atomic_fetch_add_explicit(&log_written, (int64_t)n, memory_order_relaxed) + (int64_t)n >=
            atomic_load_explicit(&log_max_bytes, memory_order_relaxed))
        log_roll();
}

void
log_limited_write(struct log_ratelimit *rl, enum log_level level, const char *component,
                  const char *fmt, ...)
{
    long long now = (long long)clock_mono_ms();
    long long start = atomic_load_explicit(&rl->window_start_ms, memory_order_relaxed);
    int dropped = 0, burst = rl->burst > 0 ? rl->burst : LOG_RATELIMIT_BURST;
    va_list ap;

    if (now - start >= LOG_RATELIMIT_WINDOW_MS &&
        atomic_compare_exchange_strong_explicit(&rl->window_start_ms, &start, now,
                                                memory_order_relaxed, memory_order_relaxed)) {
        dropped = atomic_exchange_explicit(&rl->suppressed, 0, memory_order_relaxed);
        atomic_store_explicit(&rl->count, 0, memory_order_relaxed);
    }
    if (atomic_fetch_add_explicit(&rl->count, 1, memory_order_relaxed) >= burst) {
        atomic_fetch_add_explicit(&rl->suppressed, 1, memory_order_relaxed);
        return;
    }
    if (dropped > 0)
        log_write(level, component, "(%d lines like the next were not logged in the last %d s)",
                  dropped, LOG_RATELIMIT_WINDOW_MS / 1000);
    va_start(ap, fmt);
    log_writev(level, component, fmt, ap);
    va_end(ap);
}

void
log_write(enum log_level level, const char *component, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_writev(level, component, fmt, ap);
    va_end(ap);
}

void
log_assert_failed(const char *cond, const char *file, int line, const char *func)
{
    log_write(LOG_LEVEL_ERROR, "assert", "assertion '%s' failed in %s() at %s:%d", cond, func, file,
              line);
    abort();
}
