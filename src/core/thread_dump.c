/* Thread dumps (thread_dump.h). A realtime signal goes to one thread at a
 * time (tgkill); its handler writes backtrace() into the one slot and posts
 * a semaphore (both async-signal-safe; backtrace is called once first, so
 * that libgcc is loaded before a handler needs it). The slot is the one
 * process-wide state a signal handler can reach; dump_lock serializes dumps
 * so that only one thread is ever asked at a time. */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
thread_dump_sample(int tid, void **frames, int max, bool *on_cpu)
{
    void *all[DUMP_MAX_FRAMES];
    char name[16], state;
    int n;

    pthread_once(&dump_once, dump_init);
    if (dump_init_rc != 0)
        return 0;
    thread_info(tid, name, &state);
    *on_cpu = state == 'R';
    pthread_mutex_lock(&dump_lock);
    n = tid == (int)syscall(SYS_gettid) ? backtrace(all, DUMP_MAX_FRAMES) : ask_thread(tid, all);
    pthread_mutex_unlock(&dump_lock);
    if (n > max)
        n = max;
    memcpy(frames, all, (size_t)n * sizeof *frames);
    return n;
}

/* ---- symbols ---- */

struct sym_object {
    char *path;
    uint8_t *map;
    size_t size;
    const Elf64_Sym *syms;
    size_t nsyms;
    const char *strs;
    size_t strs_size;
};

struct thread_symbolizer {
    struct sym_object *objs;
    size_t n, cap;
};

struct thread_symbolizer *
thread_symbolizer_new(void)
{
    return xcalloc(1, sizeof(struct thread_symbolizer));
}

void
thread_symbolizer_free(struct thread_symbolizer *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++) {
        if (s->objs[i].map != NULL)
            munmap(s->objs[i].map, s->objs[i].size);
        free(s->objs[i].path);
    }
    free(s->objs);
    free(s);
}

/* The object file at path, mapped, with its .symtab (else .dynsym). A file
 * that is no ELF64 object has no symbols: its frames stay offsets. */
static struct sym_object *
sym_object(struct thread_symbolizer *s, const char *path)
{
    struct sym_object *o;
    const Elf64_Ehdr *eh;
    const Elf64_Shdr *sh;
    struct stat st;
    int fd;

    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->objs[i].path, path) == 0)
            return &s->objs[i];
    xgrow((void **)&s->objs, &s->cap, s->n + 1, sizeof *s->objs);
    o = &s->objs[s->n++];
    memset(o, 0, sizeof *o);
    o->path = xstrdup(path);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return o;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size > sizeof *eh) {
        o->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (o->map == MAP_FAILED)
            o->map = NULL;
        else
            o->size = (size_t)st.st_size;
    }
    close(fd);
    if (o->map == NULL)
        return o;
    eh = (const Elf64_Ehdr *)o->map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff == 0 || eh->e_shoff + (size_t)eh->e_shnum * sizeof *sh > o->size)
        return o;
    sh = (const Elf64_Shdr *)(o->map + eh->e_shoff);
    for (int want = SHT_SYMTAB; want >= SHT_SYMTAB && o->syms == NULL;
         want = want == SHT_SYMTAB ? SHT_DYNSYM : -1) {
        for (int i = 0; i < eh->e_shnum; i++) {
            const Elf64_Shdr *strsh;

            if (sh[i].sh_type != (Elf64_Word)want || sh[i].sh_link >= eh->e_shnum)
                continue;
            strsh = &sh[sh[i].sh_link];
            if (sh[i].sh_offset + sh[i].sh_size > o->size ||
                strsh->sh_offset + strsh->sh_size > o->size)
                continue;
            o->syms = (const Elf64_Sym *)(o->map + sh[i].sh_offset);
            o->nsyms = sh[i].sh_size / sizeof(Elf64_Sym);
            o->strs = (const char *)(o->map + strsh->sh_offset);
            o->strs_size = strsh->sh_size;
            break;
        }
        if (want == SHT_DYNSYM)
            break;
    }
    return o;
}

void
thread_symbolize(struct thread_symbolizer *s, void *addr, char *buf, size_t cap)
{
    Dl_info info;
    struct sym_object *o;
    const char *best = NULL, *base;
    uintptr_t off;

    /* A return address points after the call: look up the byte before. */
    if (dladdr((char *)addr - 1, &info) == 0 || info.dli_fname == NULL) {
        snprintf(buf, cap, "%p", addr);
        return;
    }
    off = (uintptr_t)addr - 1 - (uintptr_t)info.dli_fbase;
    o = sym_object(s, info.dli_fname);
    for (size_t i = 0; i < o->nsyms; i++) {
        const Elf64_Sym *y = &o->syms[i];

        if (ELF64_ST_TYPE(y->st_info) != STT_FUNC || y->st_value == 0 || y->st_name >= o->strs_size)
            continue;
        if (off >= y->st_value && off < y->st_value + (y->st_size > 0 ? y->st_size : 1)) {
            best = o->strs + y->st_name;
            break;
        }
    }
    if (best == NULL && info.dli_sname != NULL)
        best = info.dli_sname;
    if (best != NULL) {
        snprintf(buf, cap, "%s", best);
        return;
    }
    base = strrchr(info.dli_fname, '/');
    snprintf(buf, cap, "%s+0x%lx", base != NULL ? base + 1 : info.dli_fname, (unsigned long)off);
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
