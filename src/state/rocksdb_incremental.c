/* Incremental checkpoints of the RocksDB keyed state backend (Flink's
 * RocksIncrementalSnapshotStrategy and RocksDBIncrementalRestoreOperation):
 * a RocksDB checkpoint (hard links) on the task thread; on the snapshot
 * thread its new SST files copied once into the job's shared/ folder and
 * those of the last completed checkpoint referenced, the other files
 * (MANIFEST, CURRENT, OPTIONS) copied into the checkpoint's folder; the
 * restore of a database from them. The completed checkpoint store counts
 * the references (checkpoint/shared_state_registry.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/id.h"
#include "core/log.h"
#include "core/util.h"
#include "state/rocksdb_keyed_backend_int.h"

/* ---- file sets ---- */

void
rdb_file_set_release(struct rdb_file_set *fs)
{
    for (size_t i = 0; i < fs->n; i++) {
        free(fs->files[i].name);
        free(fs->files[i].path);
    }
    free(fs->files);
    fs->files = NULL;
    fs->n = 0;
}

static void
file_set_add(struct rdb_file_set *fs, const char *name, const char *path, uint64_t size)
{
    fs->files = xrealloc(fs->files, (fs->n + 1) * sizeof *fs->files);
    fs->files[fs->n++] = (struct rdb_file){ xstrdup(name), xstrdup(path), size };
}

static void
file_set_copy(struct rdb_file_set *dst, const struct rdb_file_set *src)
{
    dst->checkpoint_id = src->checkpoint_id;
    for (size_t i = 0; i < src->n; i++)
        file_set_add(dst, src->files[i].name, src->files[i].path, src->files[i].size);
}

void
rdb_incremental_init(struct rdb_incremental *inc)
{
    memset(inc, 0, sizeof *inc);
    pthread_mutex_init(&inc->lock, NULL);
    inc->confirmed.checkpoint_id = -1;
}

void
rdb_incremental_release(struct rdb_incremental *inc)
{
    for (size_t i = 0; i < inc->npending; i++)
        rdb_file_set_release(&inc->pending[i]);
    free(inc->pending);
    inc->pending = NULL;
    inc->npending = 0;
    rdb_file_set_release(&inc->confirmed);
    pthread_mutex_destroy(&inc->lock);
}

/* ---- the synchronous part ---- */

void
rdb_incremental_take(struct rdb_snapshot_state *s, const struct keyed_snapshot_request *req)
{
    struct rocksdb_keyed_backend *b = s->b;
    spate_error err = { 0 };
    char *local = xasprintf("%s-chk-%lld", b->dir, (long long)req->checkpoint_id);
    int rc;

    s->checkpoint_id = req->checkpoint_id;
    s->shared = xstrdup(req->shared_dir);
    /* A folder left by a checkpoint of this id that failed half-way. */
    if (fs_remove_tree(local, &err) != 0) {
        snprintf(s->error, sizeof s->error, "%s", err.message);
        free(local);
        return;
    }
    if ((rc = b->p->checkpoint(b->db, local, b->errbuf, sizeof b->errbuf)) != 0) {
        snprintf(s->error, sizeof s->error, "%s", b->errbuf);
        fs_remove_tree(local, &err);
        free(local);
        return;
    }
    s->local = local;
    pthread_mutex_lock(&b->inc.lock);
    file_set_copy(&s->base, &b->inc.confirmed);
    pthread_mutex_unlock(&b->inc.lock);
}

void
rdb_incremental_discard(struct rdb_snapshot_state *s)
{
    spate_error err = { 0 };

    if (s->local == NULL)
        return;
    if (fs_remove_tree(s->local, &err) != 0)
        SPATE_LOG_WARN("rocksdb", "cannot remove a RocksDB checkpoint folder: %s", err.message);
    free(s->local);
    s->local = NULL;
}

void
rdb_incremental_snapshot_release(struct rdb_snapshot_state *s)
{
    rdb_incremental_discard(s);
    rdb_file_set_release(&s->base);
    free(s->shared);
}

/* ---- the asynchronous part ---- */

static bool
is_sst(const char *name)
{
    size_t n = strlen(name);

    return n > 4 && strcmp(name + n - 4, ".sst") == 0;
}

static const struct rdb_file *
base_file(const struct rdb_file_set *base, const char *name, uint64_t size)
{
    for (size_t i = 0; i < base->n; i++)
        if (strcmp(base->files[i].name, name) == 0 && base->files[i].size == size)
            return &base->files[i];
    return NULL;
}

static Checkpoint__DbFile *
db_file(const char *name, const char *path, uint64_t size, bool shared)
{
    Checkpoint__DbFile *f = xcalloc(1, sizeof *f);

    checkpoint__db_file__init(f);
    f->name = xstrdup(name);
    f->path = xstrdup(path);
    f->size = size;
    f->shared = shared;
    return f;
}

bool
rdb_incremental_upload(struct rdb_snapshot_state *s, const char *path,
                       Checkpoint__KeyedStateHandle *h, char *errbuf, size_t errlen)
{
    struct rocksdb_keyed_backend *b = s->b;
    struct rdb_file_set uploaded = { s->checkpoint_id, NULL, 0 }, fresh = { 0, NULL, 0 };
    const char *shared = s->shared;
    char *private;
    const char *base_name = strrchr(b->work.path, '/') + 1; /* the backend's own */
    spate_error err = { 0 };
    struct dirent *e;
    bool ok = false;
    DIR *d;

    /* Private files: a folder of the backend's beside the state file. */
    private = xasprintf("%s.%s", path, base_name);
    if (fs_mkdirs(shared, &err) != 0 || fs_mkdirs(private, &err) != 0) {
        snprintf(errbuf, errlen, "%s", err.message);
        goto out;
    }
    if ((d = opendir(s->local)) == NULL) {
        snprintf(errbuf, errlen, "cannot read the RocksDB checkpoint '%s': %s", s->local,
                 strerror(errno));
        goto out;
    }
    ok = true;
    h->files = xcalloc(1, sizeof *h->files);
    while (ok && (e = readdir(d)) != NULL) {
        char *src, *dst;
        const struct rdb_file *old;
        struct stat st;
        uint64_t size = 0;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        src = xasprintf("%s/%s", s->local, e->d_name);
        if (stat(src, &st) != 0) {
            snprintf(errbuf, errlen, "cannot read '%s': %s", src, strerror(errno));
            ok = false;
        } else if (is_sst(e->d_name) &&
                   (old = base_file(&s->base, e->d_name, (uint64_t)st.st_size)) != NULL) {
            /* In the last completed checkpoint: referenced, not copied. */
            h->files[h->n_files++] = db_file(e->d_name, old->path, old->size, true);
            file_set_add(&uploaded, e->d_name, old->path, old->size);
        } else if (is_sst(e->d_name)) {
            spate_id id;

            id_random(&id);
            dst = xasprintf("%s/%s-%s", shared, id_str(&id).s, e->d_name);
            if ((ok = fs_copy_file(src, dst, &size, &err) == 0)) {
                h->files[h->n_files++] = db_file(e->d_name, dst, size, true);
                file_set_add(&uploaded, e->d_name, dst, size);
                file_set_add(&fresh, e->d_name, dst, size);
            }
            free(dst);
        } else {
            dst = xasprintf("%s/%s", private, e->d_name);
            if ((ok = fs_copy_file(src, dst, &size, &err) == 0))
                h->files[h->n_files++] = db_file(e->d_name, dst, size, false);
            free(dst);
        }
        if (!ok && err.message[0] != '\0')
            snprintf(errbuf, errlen, "%s", err.message);
        free(src);
        h->files = xrealloc(h->files, (h->n_files + 1) * sizeof *h->files);
    }
    closedir(d);
    /* A checkpoint that failed takes back its uploads: no other
     * checkpoint references them. */
    for (size_t i = 0; !ok && i < fresh.n; i++)
        unlink(fresh.files[i].path);
    if (ok) {
        /* Referenced by later checkpoints once this one completed. */
        pthread_mutex_lock(&b->inc.lock);
        b->inc.pending = xrealloc(b->inc.pending, (b->inc.npending + 1) * sizeof *b->inc.pending);
        b->inc.pending[b->inc.npending++] = uploaded;
        uploaded.files = NULL;
        uploaded.n = 0;
        pthread_mutex_unlock(&b->inc.lock);
    }
out:
    rdb_file_set_release(&uploaded);
    rdb_file_set_release(&fresh);
    free(private);
    return ok;
}

void
rdb_incremental_complete(struct rocksdb_keyed_backend *b, int64_t checkpoint_id)
{
    size_t k = 0;

    pthread_mutex_lock(&b->inc.lock);
    for (size_t i = 0; i < b->inc.npending; i++) {
        struct rdb_file_set *fs = &b->inc.pending[i];

        if (fs->checkpoint_id == checkpoint_id && checkpoint_id > b->inc.confirmed.checkpoint_id) {
            rdb_file_set_release(&b->inc.confirmed);
            b->inc.confirmed = *fs;
        } else if (fs->checkpoint_id <= checkpoint_id) {
            rdb_file_set_release(fs); /* never to be completed: subsumed */
        } else {
            b->inc.pending[k++] = *fs;
        }
    }
    b->inc.npending = k;
    pthread_mutex_unlock(&b->inc.lock);
}

/* ---- restore ---- */

/* Puts the files of h into dir (made): shared SST files hard-linked
 * (never changed by RocksDB), the others copied (RocksDB appends to its
 * MANIFEST). */
static int
place_files(const Checkpoint__KeyedStateHandle *h, const char *dir, spate_error *err)
{
    int rc;

    if ((rc = fs_mkdirs(dir, err)) != 0)
        return rc;
    for (size_t i = 0; i < h->n_files; i++) {
        const Checkpoint__DbFile *f = h->files[i];
        char *dst;
        struct stat st;

        if (f->name == NULL || f->name[0] == '\0' || strchr(f->name, '/') != NULL ||
            f->name[0] == '.')
            return spate_error_set(err, SPATE_EPROTO,
                                   "a RocksDB checkpoint file of '%s' has a bad name '%s'", f->path,
                                   f->name ? f->name : "");
        if (stat(f->path, &st) != 0)
            return spate_error_set(err, SPATE_ENOENT, "RocksDB checkpoint file '%s' is missing: %s",
                                   f->path, strerror(errno));
        if ((uint64_t)st.st_size != f->size)
            return spate_error_set(err, SPATE_EPROTO,
                                   "RocksDB checkpoint file '%s' has %lld bytes, the checkpoint "
                                   "wrote %llu",
                                   f->path, (long long)st.st_size, (unsigned long long)f->size);
        dst = xasprintf("%s/%s", dir, f->name);
        rc = f->shared ? fs_link_or_copy(f->path, dst, err) : fs_copy_file(f->path, dst, NULL, err);
        free(dst);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The handle's database opened in a fresh folder beside b's. */
static int
open_aside(struct rocksdb_keyed_backend *b, const Checkpoint__KeyedStateHandle *h, char **dir,
           struct rdb **db, spate_error *err)
{
    int rc;

    *dir = xasprintf("%s-restore-XXXXXX", b->dir);
    if (mkdtemp(*dir) == NULL) {
        rc = spate_error_set(err, -errno, "cannot make a folder for a restore: %s",
                             spate_strerror(-errno));
        free(*dir);
        *dir = NULL;
        return rc;
    }
    if ((rc = place_files(h, *dir, err)) != 0)
        return rc;
    if ((rc = rdb_open_states(b, *dir, db)) != 0)
        return spate_error_set(err, rc, "restore from '%s': %s", h->path, b->errbuf);
    return 0;
}

/* Column family cf's name: its state's, or a timer domain's. */
static const char *
cf_name(const struct rocksdb_keyed_backend *b, int cf)
{
    for (int i = 0; i < b->nstates; i++)
        if (b->states[i].heap == NULL && b->states[i].cf == cf)
            return b->states[i].base.desc.name;
    return cf == b->timers[1].cf ? RDB_TIMER_CF_EVENT : RDB_TIMER_CF_PROCESSING;
}

/* Copies the entries of b's key groups from db into b's database. */
static int
copy_key_groups(struct rocksdb_keyed_backend *b, struct rdb *db, spate_error *err)
{
    uint8_t lo[KG_BYTES] = { (uint8_t)(b->range.start >> 8), (uint8_t)b->range.start };
    uint8_t hi[KG_BYTES + 1] = { 0xff, 0xff, 0xff };
    size_t hi_len = KG_BYTES + 1;
    int rc = 0;

    if (b->range.end + 1 < 65536) {
        hi[0] = (uint8_t)((b->range.end + 1) >> 8);
        hi[1] = (uint8_t)(b->range.end + 1);
        hi_len = KG_BYTES;
    }
    /* The keyed states' column families, then the timers'. */
    for (int cf = 0; cf < b->ncf && rc == 0; cf++) {
        struct rdb_iter *it = b->p->iter(db, cf, NULL, lo, sizeof lo, hi, hi_len);

        for (; it != NULL && rc == 0 && b->p->iter_valid(it); b->p->iter_next(it)) {
            size_t kl, vl;
            const uint8_t *k = b->p->iter_key(it, &kl), *v = b->p->iter_value(it, &vl);

            rc = b->p->put(b->db, cf, k, kl, v, vl, b->errbuf, sizeof b->errbuf);
        }
        if (rc == 0)
            rc = it != NULL ? b->p->iter_status(it, b->errbuf, sizeof b->errbuf) : SPATE_ENOMEM;
        b->p->iter_free(it);
        if (rc != 0)
            rc = spate_error_set(err, rc, "restore of '%s': %s", cf_name(b, cf), b->errbuf);
    }
    return rc;
}

int
rdb_incremental_restore(struct rocksdb_keyed_backend *b, const Checkpoint__OperatorSubtaskState *st,
                        spate_error *err)
{
    size_t nfiles = 0;
    int rc = 0;

    for (size_t k = 0; k < st->n_keyed; k++)
        nfiles += st->keyed[k]->n_files;
    if (nfiles == 0)
        return 0; /* a full snapshot: restored already */
    if (st->n_keyed == 1 && st->keyed[0]->key_group_start == b->range.start &&
        st->keyed[0]->key_group_end == b->range.end) {
        const Checkpoint__KeyedStateHandle *h = st->keyed[0];

        /* The same key groups: the checkpoint's database becomes b's,
         * and its shared files are referenced by b's next checkpoint. */
        b->p->close(b->db);
        b->db = NULL;
        if ((rc = fs_remove_tree(b->dir, err)) != 0 || (rc = place_files(h, b->dir, err)) != 0)
            return rc;
        if ((rc = rdb_open_states(b, b->dir, &b->db)) != 0)
            return spate_error_set(err, rc, "restore from '%s': %s", h->path, b->errbuf);
        pthread_mutex_lock(&b->inc.lock);
        rdb_file_set_release(&b->inc.confirmed);
        b->inc.confirmed.checkpoint_id = 0;
        for (size_t i = 0; i < h->n_files; i++)
            if (h->files[i]->shared)
                file_set_add(&b->inc.confirmed, h->files[i]->name, h->files[i]->path,
                             h->files[i]->size);
        pthread_mutex_unlock(&b->inc.lock);
        return 0;
    }
    /* Rescaled: each database aside, clipped to b's key groups. */
    for (size_t k = 0; k < st->n_keyed && rc == 0; k++) {
        struct rdb *db = NULL;
        char *dir = NULL;
        spate_error rm = { 0 };

        if (st->keyed[k]->n_files == 0)
            continue;
        if ((rc = open_aside(b, st->keyed[k], &dir, &db, err)) == 0)
            rc = copy_key_groups(b, db, err);
        if (db != NULL)
            b->p->close(db);
        if (dir != NULL && fs_remove_tree(dir, &rm) != 0)
            SPATE_LOG_WARN("rocksdb", "cannot remove a restore folder: %s", rm.message);
        free(dir);
    }
    return rc;
}
