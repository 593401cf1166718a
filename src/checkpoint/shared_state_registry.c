/* The shared files of a job's retained checkpoints (shared_state_registry.h). */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/shared_state_registry.h"
#include "core/alloc.h"
#include "core/hmap.h"
#include "core/log.h"

#define REG_LOG "checkpoint"

/* A shared file and how many registered checkpoints reference it. */
struct shared_file {
    struct hmap_node node;
    char *path;
    int refs;
};

/* A registered checkpoint and the files it references (each once). */
struct registered {
    struct hmap_node node;
    uint64_t id;
    struct shared_file **files;
    size_t n;
};

struct shared_state_registry {
    pthread_mutex_t lock;
    struct hmap files;       /* struct shared_file, by path */
    struct hmap checkpoints; /* struct registered, by id */
};

struct shared_state_registry *
shared_state_registry_new(void)
{
    struct shared_state_registry *r = xcalloc(1, sizeof *r);

    pthread_mutex_init(&r->lock, NULL);
    hmap_init(&r->files);
    hmap_init(&r->checkpoints);
    return r;
}

void
shared_state_registry_free(struct shared_state_registry *r)
{
    struct hmap_node *n;

    if (r == NULL)
        return;
    while ((n = hmap_first(&r->checkpoints)) != NULL) {
        struct registered *c = (struct registered *)n;

        hmap_remove(&r->checkpoints, n);
        free(c->files);
        free(c);
    }
    while ((n = hmap_first(&r->files)) != NULL) {
        struct shared_file *f = (struct shared_file *)n;

        hmap_remove(&r->files, n);
        free(f->path);
        free(f);
    }
    hmap_release(&r->files);
    hmap_release(&r->checkpoints);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static struct shared_file *
find_file(struct shared_state_registry *r, const char *path)
{
    uint64_t h = hmap_hash_string(path);
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, h, &r->files)
    if (strcmp(((struct shared_file *)n)->path, path) == 0)
        return (struct shared_file *)n;
    return NULL;
}

static struct registered *
find_checkpoint(struct shared_state_registry *r, uint64_t id)
{
    uint64_t h = hmap_hash_u64(id);
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, h, &r->checkpoints)
    if (((struct registered *)n)->id == id)
        return (struct registered *)n;
    return NULL;
}

/* Calls fn on each shared file path of md. */
static int
each_shared(const Checkpoint__CheckpointMetadata *md, int (*fn)(const char *path, void *arg),
            void *arg)
{
    int rc;

    for (size_t o = 0; o < md->n_operators; o++)
        for (size_t s = 0; s < md->operators[o]->n_subtasks; s++) {
            const Checkpoint__OperatorSubtaskState *st = md->operators[o]->subtasks[s];

            for (size_t k = 0; k < st->n_keyed; k++)
                for (size_t f = 0; f < st->keyed[k]->n_files; f++)
                    if (st->keyed[k]->files[f]->shared &&
                        (rc = fn(st->keyed[k]->files[f]->path, arg)) != 0)
                        return rc;
        }
    return 0;
}

/* What each_shared's calls work on. */
struct walk {
    struct shared_state_registry *r;
    struct registered *c; /* add_ref's */
    spate_error *err;     /* check_new_file's */
};

static int
check_new_file(const char *path, void *arg)
{
    struct walk *w = arg;
    struct stat st;

    if (find_file(w->r, path) != NULL || stat(path, &st) == 0)
        return 0;
    return spate_error_set(w->err, SPATE_ENOENT,
                           "the checkpoint references shared file '%s', which is gone (%s): a "
                           "task referenced the files of a checkpoint that was subsumed",
                           path, spate_strerror(-errno));
}

static int
add_ref(const char *path, void *arg)
{
    struct shared_state_registry *r = ((struct walk *)arg)->r;
    struct registered *c = ((struct walk *)arg)->c;
    struct shared_file *f = find_file(r, path);

    if (f == NULL) {
        f = xcalloc(1, sizeof *f);
        f->path = xstrdup(path);
        hmap_insert(&r->files, &f->node, hmap_hash_string(path));
    }
    for (size_t i = 0; i < c->n; i++)
        if (c->files[i] == f)
            return 0; /* referenced twice by one checkpoint: counted once */
    c->files = xrealloc(c->files, (c->n + 1) * sizeof *c->files);
    c->files[c->n++] = f;
    f->refs++;
    return 0;
}

int
shared_state_registry_register(struct shared_state_registry *r, uint64_t id,
                               const Checkpoint__CheckpointMetadata *md, spate_error *err)
{
    struct walk w = { r, NULL, err };
    struct registered *c;
    int rc;

    pthread_mutex_lock(&r->lock);
    if (find_checkpoint(r, id) != NULL) {
        pthread_mutex_unlock(&r->lock);
        return 0;
    }
    if ((rc = each_shared(md, check_new_file, &w)) != 0) {
        pthread_mutex_unlock(&r->lock);
        return rc;
    }
    c = xcalloc(1, sizeof *c);
    c->id = id;
    hmap_insert(&r->checkpoints, &c->node, hmap_hash_u64(id));
    w.c = c;
    each_shared(md, add_ref, &w);
    pthread_mutex_unlock(&r->lock);
    return 0;
}

bool
shared_state_registry_contains(struct shared_state_registry *r, uint64_t id)
{
    bool found;

    pthread_mutex_lock(&r->lock);
    found = find_checkpoint(r, id) != NULL;
    pthread_mutex_unlock(&r->lock);
    return found;
}

size_t
shared_state_registry_unregister(struct shared_state_registry *r, uint64_t id)
{
    struct registered *c;
    size_t deleted = 0;

    pthread_mutex_lock(&r->lock);
    if ((c = find_checkpoint(r, id)) == NULL) {
        pthread_mutex_unlock(&r->lock);
        return 0;
    }
    hmap_remove(&r->checkpoints, &c->node);
    for (size_t i = 0; i < c->n; i++) {
        struct shared_file *f = c->files[i];

        if (--f->refs > 0)
            continue;
        if (unlink(f->path) != 0 && errno != ENOENT)
            SPATE_LOG_WARN(REG_LOG, "cannot delete shared file '%s': %s", f->path, strerror(errno));
        else
            deleted++;
        hmap_remove(&r->files, &f->node);
        free(f->path);
        free(f);
    }
    free(c->files);
    free(c);
    pthread_mutex_unlock(&r->lock);
    return deleted;
}

size_t
shared_state_registry_discard(struct shared_state_registry *r,
                              const Checkpoint__OperatorSubtaskState *st)
{
    size_t deleted = 0;

    pthread_mutex_lock(&r->lock);
    for (size_t k = 0; k < st->n_keyed; k++)
        for (size_t f = 0; f < st->keyed[k]->n_files; f++) {
            const Checkpoint__DbFile *file = st->keyed[k]->files[f];

            if (!file->shared || find_file(r, file->path) != NULL)
                continue;
            if (unlink(file->path) == 0)
                deleted++;
            else if (errno != ENOENT)
                SPATE_LOG_WARN(REG_LOG, "cannot delete shared file '%s': %s", file->path,
                               strerror(errno));
        }
    pthread_mutex_unlock(&r->lock);
    return deleted;
}

int
shared_state_registry_refs(struct shared_state_registry *r, const char *path)
{
    struct shared_file *f;
    int refs;

    pthread_mutex_lock(&r->lock);
    f = find_file(r, path);
    refs = f != NULL ? f->refs : 0;
    pthread_mutex_unlock(&r->lock);
    return refs;
}

size_t
shared_state_registry_sweep(struct shared_state_registry *r, const char *dir)
{
    size_t deleted = 0;
    struct dirent *e;
    DIR *d;

    if ((d = opendir(dir)) == NULL)
        return 0; /* no shared folder: nothing was uploaded */
    pthread_mutex_lock(&r->lock);
    while ((e = readdir(d)) != NULL) {
        char *path;

        if (e->d_name[0] == '.')
            continue;
        path = xasprintf("%s/%s", dir, e->d_name);
        if (find_file(r, path) == NULL) {
            if (unlink(path) == 0)
                deleted++;
            else
                SPATE_LOG_WARN(REG_LOG, "cannot delete unreferenced shared file '%s': %s", path,
                               strerror(errno));
        }
        free(path);
    }
    pthread_mutex_unlock(&r->lock);
    closedir(d);
    return deleted;
}
