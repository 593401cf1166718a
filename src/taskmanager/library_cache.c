/* The job library cache (library_cache.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/tmp_dir.h"
#include "taskmanager/library_cache.h"

struct lib_entry {
    struct lib_entry *next;
    spate_id job;
    int refs;
    bool loading; /* its first task is loading it */
    int rc;       /* the load's outcome */
    spate_error err;
    struct job_library *lib;
    uint8_t key[SHA256_BYTES];
    bool have_blob; /* the BlobCache's copy is held until the library closes */
};

struct library_cache {
    pthread_mutex_t lock; /* guards entries and their fields */
    pthread_cond_t loaded;
    struct lib_entry *entries;
    struct tmp_dir tmp; /* the libraries' copies, and the BlobCache's blobs */
    struct blob_cache *blobs;
};

int
library_cache_new(const char *base, const char *secret, struct tls_context *tls,
                  int64_t max_blob_bytes, struct library_cache **out, spate_error *err)
{
    struct library_cache *c = xcalloc(1, sizeof *c);
    char *blobs;
    int rc;

    if ((rc = tmp_dir_make(base, "libraries", &c->tmp, err)) != 0) {
        free(c);
        return spate_error_wrap(err, "the job libraries' folder");
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->loaded, NULL);
    blobs = xasprintf("%s/blobs", c->tmp.path);
    c->blobs = blob_cache_new(blobs, secret, tls, max_blob_bytes);
    free(blobs);
    *out = c;
    return 0;
}

int
library_cache_from_config(const struct config *conf, struct tls_context *tls,
                          struct library_cache **out, spate_error *err)
{
    const char *dir = NULL, *secret = NULL;
    char buf[512];
    uint64_t max;
    int rc;

    if (config_get_string(conf, CFG(BLOB_STORAGE_DIRECTORY), &dir, NULL) != 0 || dir == NULL)
        dir = tmp_dir_base(conf, buf, sizeof buf);
    if ((rc = config_get_memory_bytes(conf, CFG(BLOB_MAX_SIZE), &max, err)) != 0)
        return rc;
    config_get_string(conf, CFG(SECURITY_RPC_SECRET), &secret, NULL);
    return library_cache_new(dir, secret, tls, (int64_t)max, out, err);
}

static void
lib_entry_close(struct library_cache *c, struct lib_entry *e)
{
    job_library_close(e->lib);
    if (e->have_blob)
        blob_cache_release(c->blobs, e->key);
    free(e);
}

void
library_cache_free(struct library_cache *c)
{
    if (c == NULL)
        return;
    while (c->entries != NULL) {
        struct lib_entry *e = c->entries;

        c->entries = e->next;
        lib_entry_close(c, e);
    }
    blob_cache_free(c->blobs);
    pthread_cond_destroy(&c->loaded);
    pthread_mutex_destroy(&c->lock);
    tmp_dir_remove(&c->tmp);
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

/* Drops a reference of an entry whose load failed (lock held); the last one
 * takes it out of the table (returned, for free), so that the job's next
 * deployment tries again (a fetch from a JobManager that has since gone
 * must not stay this job's answer). */
static struct lib_entry *
drop_failed_locked(struct library_cache *c, struct lib_entry *e)
{
    struct lib_entry **p;

    if (--e->refs > 0 || e->loading)
        return NULL;
    for (p = &c->entries; *p != e; p = &(*p)->next)
        ;
    *p = e->next;
    return e;
}

int
library_cache_acquire(struct library_cache *c, const spate_id *job, const char *blob_server,
                      const uint8_t sha256[32], const struct job_library **out, spate_error *err)
{
    const char *path = NULL;
    struct job_library *lib = NULL;
    struct lib_entry *e, *failed = NULL;
    spate_error load_err = { 0 };
    int rc;

    pthread_mutex_lock(&c->lock);
    e = find(c, job);
    if (e != NULL) {
        e->refs++;
        while (e->loading)
            pthread_cond_wait(&c->loaded, &c->lock);
        rc = e->rc;
        *out = e->lib;
        if (rc != 0) {
            *err = e->err;
            failed = drop_failed_locked(c, e);
        }
        pthread_mutex_unlock(&c->lock);
        free(failed);
        return rc;
    }
    e = xcalloc(1, sizeof *e);
    e->job = *job;
    e->refs = 1;
    e->loading = true;
    e->next = c->entries;
    c->entries = e;
    pthread_mutex_unlock(&c->lock);

    /* Fetch and load outside the lock: they take a while. */
    if (sha256 == NULL) {
        rc = spate_error_set(&load_err, SPATE_EINVAL, "the task names no job library blob");
    } else {
        memcpy(e->key, sha256, SHA256_BYTES);
        rc = blob_cache_get(c->blobs, blob_server, sha256, &path, &load_err);
        e->have_blob = rc == 0;
        if (rc == 0)
            rc = job_library_open(path, c->tmp.path, sha256, &lib, &load_err);
        if (rc != 0 && e->have_blob) {
            blob_cache_release(c->blobs, e->key);
            e->have_blob = false;
        }
    }

    pthread_mutex_lock(&c->lock);
    e->loading = false;
    e->rc = rc;
    e->err = load_err;
    e->lib = lib;
    *out = lib;
    if (rc != 0) {
        *err = load_err;
        failed = drop_failed_locked(c, e);
    }
    pthread_cond_broadcast(&c->loaded);
    pthread_mutex_unlock(&c->lock);
    free(failed);
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
    if (gone != NULL)
        lib_entry_close(c, gone);
}
