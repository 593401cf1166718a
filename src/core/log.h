/* Logging: one line per event with time, level, thread, component and the
 * caller's job=/task= ids, to stderr or a per-process file. Any thread may log;
 * each line is one write(2), so lines from threads never interleave. The level
 * is checked before anything is formatted. */
#ifndef SPATE_CORE_LOG_H
#define SPATE_CORE_LOG_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>

#include <spate/error.h>

enum log_level {
    LOG_LEVEL_TRACE,
    LOG_LEVEL_DEBUG,
    LOG_LEVEL_INFO,
    LOG_LEVEL_WARN,
    LOG_LEVEL_ERROR,
    LOG_LEVEL_OFF,
};

/* The process's threshold: the logger's one piece of process-wide state, set at
 * start-up and read (relaxed: a stale level only delays a change) per call. */
extern _Atomic int log_threshold;

#define SPATE_LOG(level, component, ...)                                                \
    do {                                                                                \
        if ((int)(level) >= atomic_load_explicit(&log_threshold, memory_order_relaxed)) \
            log_write((level), (component), __VA_ARGS__);                               \
    } while (0)

#define SPATE_LOG_TRACE(component, ...) SPATE_LOG(LOG_LEVEL_TRACE, component, __VA_ARGS__)
#define SPATE_LOG_DEBUG(component, ...) SPATE_LOG(LOG_LEVEL_DEBUG, component, __VA_ARGS__)
#define SPATE_LOG_INFO(component, ...)  SPATE_LOG(LOG_LEVEL_INFO, component, __VA_ARGS__)
#define SPATE_LOG_WARN(component, ...)  SPATE_LOG(LOG_LEVEL_WARN, component, __VA_ARGS__)
#define SPATE_LOG_ERROR(component, ...) SPATE_LOG(LOG_LEVEL_ERROR, component, __VA_ARGS__)

/* A line an outsider can make us repeat (a refused connection, a failed
 * accept): at most LOG_RATELIMIT_BURST lines per LOG_RATELIMIT_WINDOW_MS per
 * limiter; the first line of the next window says how many were dropped.
 * The limiter lives in the object that logs (zeroed is ready); any thread
 * (atomics, relaxed: a line more or less at a window's edge is fine). */
#define LOG_RATELIMIT_BURST     20
#define LOG_RATELIMIT_WINDOW_MS 10000

struct log_ratelimit {
    _Atomic long long window_start_ms;
    _Atomic int count;
    _Atomic int suppressed;
    int burst; /* lines per window, set before the first; 0: LOG_RATELIMIT_BURST */
};

#define SPATE_LOG_LIMITED(rl, level, component, ...)                                    \
    do {                                                                                \
        if ((int)(level) >= atomic_load_explicit(&log_threshold, memory_order_relaxed)) \
            log_limited_write((rl), (level), (component), __VA_ARGS__);                 \
    } while (0)

void log_limited_write(struct log_ratelimit *rl, enum log_level level, const char *component,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static inline int
log_enabled(enum log_level level)
{
    return (int)level >= atomic_load_explicit(&log_threshold, memory_order_relaxed);
}

void log_write(enum log_level level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void log_writev(enum log_level level, const char *component, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

void log_set_level(enum log_level level);
/* "trace", "debug", "info", "warn"/"warning", "error", "off", any case. */
int log_parse_level(const char *text, enum log_level *level, spate_error *err);
const char *log_level_name(enum log_level level);

/* Sends lines to fd (2 = stderr, the default). The logger does not own fd. */
void log_set_fd(int fd);
/* Appends lines to path (created 0644, parent folders too); stderr on failure. */
int log_open_file(const char *path, spate_error *err);
/* Closes a file opened by log_open_file and returns to stderr. */
void log_close_file(void);
/* The file log_open_file opened rolls over once it holds max_bytes (0:
 * never, the default): it becomes path.1, path.1 path.2, ..., up to
 * path.LOG_FILE_BACKUPS (the oldest goes), and lines go on to a new path,
 * as Flink's rolling file appender (log.file.max-size). */
#define LOG_FILE_BACKUPS 10
void log_set_max_size(int64_t max_bytes);

/* A short name for the calling thread, shown in its lines ("rpc", "task-3")
 * and, its first 15 bytes, to the OS (top -H, perf, gdb). */
void log_set_thread_name(const char *name);
/* Fields every line the calling thread logs carries before its message, as
 * "job=ID task=ID" on a task thread (STYLE: lines name their job and task);
 * NULL clears them. At most 95 bytes are kept. */
void log_set_thread_fields(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The fields the calling thread's lines carry now ("" when none), to hand to
 * a thread it starts. */
const char *log_thread_fields(void);
/* Lines carry fields (a string the caller keeps alive, or NULL: none) until
 * log_leave_fields(the returned previous ones): how an RPC endpoint's code
 * logs with its endpoint's fields on the shared loop thread. */
const char *log_enter_fields(const char *fields);
void log_leave_fields(const char *prev);

void log_assert_failed(const char *cond, const char *file, int line, const char *func)
    __attribute__((noreturn));

#endif
