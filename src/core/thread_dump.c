/* Thread dumps (thread_dump.h). A realtime signal goes to one thread at a
 * time (tgkill); its handler writes backtrace() into the one slot and posts
 * a semaphore (both async-signal-safe; backtrace is called once first, so
 * that libgcc is loaded before a handler needs it). The slot is the one
 * process-wide state a signal handler can reach; dump_lock serializes dumps
 * so that only one thread is ever asked at a time. */
#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/thread_dump.h"

#define DUMP_SIGNAL     (SIGRTMIN + 5)
#define DUMP_MAX_FRAMES 64
#define DUMP_WAIT_MS    200

static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t dump_once = PTHREAD_ONCE_INIT;
static int dump_init_rc;
static sem_t dump_done;
static void *dump_frames[DUMP_MAX_FRAMES];
static _Atomic int dump_nframes;
static _Atomic int dump_target; /* the tid asked: a late answer of another is dropped */

static void
dump_handler(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;

    (void)sig;
    (void)si;
    (void)uc;
    if (atomic_load(&dump_target) == (int)syscall(SYS_gettid)) {
        atomic_store(&dump_nframes, backtrace(dump_frames, DUMP_MAX_FRAMES));
        sem_post(&dump_done);
    }
    errno = saved;
}

static void
dump_init(void)
{
    struct sigaction sa;
    void *warm[2];

    backtrace(warm, 2); /* loads libgcc outside any handler */
    if (sem_init(&dump_done, 0, 0) != 0) {
        dump_init_rc = SPATE_EIO;
        return;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = dump_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    dump_init_rc = sigaction(DUMP_SIGNAL, &sa, NULL) == 0 ? 0 : SPATE_EIO;
}

/* The thread's name and its state letter from /proc (R, S, D, ...). */
static void
thread_info(int tid, char name[16], char *state)
{
    char path[64], buf[512], *p;
    FILE *f;

    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    name[0] = '\0';
    if ((f = fopen(path, "re")) != NULL) {
        if (fgets(name, 16, f) != NULL)
            name[strcspn(name, "\n")] = '\0';
        fclose(f);
    }
    *state = '?';
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    if ((f = fopen(path, "re")) != NULL) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);

        buf[n] = '\0';
        fclose(f);
        if ((p = strrchr(buf, ')')) != NULL && p[1] == ' ')
            *state = p[2];
    }
}

/* Java's Thread.State names for what /proc says. */
static const char *
state_name(char s)
{
    switch (s) {
    case 'R':
        return "RUNNABLE";
    case 'S':
        return "WAITING";
    case 'D':
        return "BLOCKED";
    case 'T':
    case 't':
        return "TIMED_WAITING";
    default:
        return "RUNNABLE";
    }
}

/* Asks thread tid for its stack; the frames, or 0 when it did not answer. */
static int
ask_thread(int tid, void **frames)
{
    struct timespec deadline;
    int n;

    while (sem_trywait(&dump_done) == 0)
        ; /* a late answer of an earlier thread */
    atomic_store(&dump_nframes, 0);
    atomic_store(&dump_target, tid);
    if (syscall(SYS_tgkill, getpid(), tid, DUMP_SIGNAL) != 0) {
        atomic_store(&dump_target, 0);
        return 0;
    }
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += DUMP_WAIT_MS * 1000000L;
    deadline.tv_sec += deadline.tv_nsec / 1000000000L;
    deadline.tv_nsec %= 1000000000L;
    while (sem_timedwait(&dump_done, &deadline) != 0) {
        if (errno != EINTR) {
            atomic_store(&dump_target, 0);
            return 0;
        }
    }
    atomic_store(&dump_target, 0);
    n = atomic_load(&dump_nframes);
    memcpy(frames, dump_frames, (size_t)n * sizeof *frames);
    return n;
}

int
thread_dump_collect(struct thread_stack **out, size_t *count, spate_error *err)
{
    struct thread_stack *t = NULL;
    size_t n = 0, cap = 0;
    int self = (int)syscall(SYS_gettid);
    struct dirent *e;
    DIR *d;

    pthread_once(&dump_once, dump_init);
    if (dump_init_rc != 0)
        return spate_error_set(err, dump_init_rc, "cannot install the thread dump's signal");
    if ((d = opendir("/proc/self/task")) == NULL)
        return spate_error_set(err, SPATE_EIO, "cannot list the threads in /proc/self/task");
    pthread_mutex_lock(&dump_lock);
    while ((e = readdir(d)) != NULL) {
        void *frames[DUMP_MAX_FRAMES];
        char state, head[96], **syms;
        int tid = atoi(e->d_name), nf;
        size_t len, at;

        if (tid <= 0)
            continue;
        xgrow((void **)&t, &cap, n + 1, sizeof *t);
        t[n].tid = tid;
        thread_info(tid, t[n].name, &state);
        nf = tid == self ? backtrace(frames, DUMP_MAX_FRAMES) : ask_thread(tid, frames);
        snprintf(head, sizeof head, "\"%s\" Id=%d %s%s\n", t[n].name, tid, state_name(state),
                 nf == 0 ? " (no stack: the thread did not answer)" : "");
        syms = nf > 0 ? backtrace_symbols(frames, nf) : NULL;
        len = strlen(head) + 1;
        for (int i = 0; i < nf; i++)
            len += (syms != NULL ? strlen(syms[i]) : 20) + 6;
        t[n].text = xmalloc(len);
        at = (size_t)sprintf(t[n].text, "%s", head);
        for (int i = 0; i < nf; i++) {
            if (syms != NULL)
                at += (size_t)sprintf(t[n].text + at, "\tat %s\n", syms[i]);
            else
                at += (size_t)sprintf(t[n].text + at, "\tat %p\n", frames[i]);
        }
        free(syms);
        n++;
    }
    pthread_mutex_unlock(&dump_lock);
    closedir(d);
    *out = t;
    *count = n;
    return 0;
}

void
thread_dump_free(struct thread_stack *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(t[i].text);
    free(t);
}
