/* The job library cache (library_cache.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "taskmanager/library_cache.h"

struct lib_entry {
    struct lib_entry *next;
    spate_id job;
    int refs;
    bool loading; /* its first task is loading it */
    int rc;       /* the load's outcome */
    spate_error err;
    struct job_library *lib;
};

struct library_cache {
    pthread_mutex_t lock; /* guards entries and their fields */
    pthread_cond_t loaded;
    struct lib_entry *entries;
    char *copy_dir;
};

struct library_cache *
library_cache_new(const char *copy_dir)
{
    struct library_cache *c = xcalloc(1, sizeof *c);

    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->loaded, NULL);
    c->copy_dir = xstrdup(copy_dir);
    mkdir(copy_dir, 0700);
    return c;
}

void
library_cache_free(struct library_cache *c)
{
    if (c == NULL)
        return;
    while (c->entries != NULL) {
        struct lib_entry *e = c->entries;

        c->entries = e->next;
        job_library_close(e->lib);
        free(e);
    }
    pthread_cond_destroy(&c->loaded);
    pthread_mutex_destroy(&c->lock);
    rmdir(c->copy_dir); /* empty once every copy is closed */
    free(c->copy_dir);
    free(c);
}

static struct lib_entry *
find(struct library_cache *c, const spate_id *job)
{
    for (struct lib_entry *e = c->entries; e != NULL; e = e->next)
        if (id_equal(&e->job, job))
            return e;
    return NULL;
}

int
library_cache_acquire(struct library_cache *c, const spate_id *job, const char *path,
                      const uint8_t sha256[32], const struct job_library **out, spate_error *err)
{
    struct job_library *lib = NULL;
    struct lib_entry *e;
    spate_error load_err = { 0 };
    int rc;

    pthread_mutex_lock(&c->lock);
    e = find(c, job);
    if (e != NULL) {
        e->refs++;
        while (e->loading)
            pthread_cond_wait(&c->loaded, &c->lock);
        rc = e->rc;
        if (rc != 0)
            *err = e->err;
        *out = e->lib;
        if (rc != 0)
            e->refs--;
        pthread_mutex_unlock(&c->lock);
        return rc;
    }
    e = xcalloc(1, sizeof *e);
    e->job = *job;
    e->refs = 1;
    e->loading = true;
    e->next = c->entries;
    c->entries = e;
    pthread_mutex_unlock(&c->lock);

    /* Load outside the lock: copying and dlopen take a while. */
    rc = job_library_open(path, c->copy_dir, sha256, &lib, &load_err);

    pthread_mutex_lock(&c->lock);
    e->loading = false;
    e->rc = rc;
    e->err = load_err;
    e->lib = lib;
    if (rc != 0) {
        *err = load_err;
        e->refs--;
    }
    *out = lib;
    pthread_cond_broadcast(&c->loaded);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

void
library_cache_release(struct library_cache *c, const spate_id *job)
{
    struct lib_entry **p, *gone = NULL;

    pthread_mutex_lock(&c->lock);
    for (p = &c->entries; *p != NULL; p = &(*p)->next) {
        if (!id_equal(&(*p)->job, job))
            continue;
        if (--(*p)->refs <= 0 && !(*p)->loading) {
            gone = *p;
            *p = gone->next;
        }
        break;
    }
    pthread_mutex_unlock(&c->lock);
    if (gone != NULL) {
        job_library_close(gone->lib);
        free(gone);
    }
}
