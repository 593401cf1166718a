/* Shared pieces of src/ha (ha_int.h): the listener guard, the files under
 * high-availability.storageDir (written to a temporary name, synced, renamed;
 * read back with the size and SHA-256 their pointers hold) and their
 * pointers, the file-based job result store, and the leader information's
 * encoding. Any thread. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/sha256.h"
#include "ha/ha_int.h"
#include "proto/ha.pb-c.h"

/* ---- the guard ---------------------------------------------------------------------- */

void
ha_guard_init(struct ha_guard *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->stopped = false;
    g->notifying = false;
}

void
ha_guard_release(struct ha_guard *g)
{
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

bool
ha_guard_begin(struct ha_guard *g)
{
    bool ok;

    pthread_mutex_lock(&g->mu);
    while (g->notifying && !pthread_equal(g->notifier, pthread_self()))
        pthread_cond_wait(&g->cv, &g->mu); /* one call at a time */
    ok = !g->stopped;
    if (ok) {
        g->notifying = true;
        g->notifier = pthread_self();
    }
    pthread_mutex_unlock(&g->mu);
    return ok;
}

void
ha_guard_end(struct ha_guard *g)
{
    pthread_mutex_lock(&g->mu);
    g->notifying = false;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

void
ha_guard_stop(struct ha_guard *g)
{
    pthread_mutex_lock(&g->mu);
    g->stopped = true;
    while (g->notifying && !pthread_equal(g->notifier, pthread_self()))
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

/* ---- leader information ------------------------------------------------------------- */

uint8_t *
ha_leader_info_encode(const spate_id *session, const char *address, size_t *len)
{
    Ha__LeaderInfo m = HA__LEADER_INFO__INIT;
    uint8_t *buf;

    m.session_id.data = (uint8_t *)session->bytes;
    m.session_id.len = ID_BYTES;
    m.address = (char *)address;
    *len = ha__leader_info__get_packed_size(&m);
    buf = xmalloc(*len ? *len : 1);
    ha__leader_info__pack(&m, buf);
    return buf;
}

int
ha_leader_info_decode(const uint8_t *data, size_t len, spate_id *session, char *address,
                      size_t address_size, spate_error *err)
{
    Ha__LeaderInfo *m;
    size_t n;
    int rc = 0;

    if (len == 0)
        return spate_error_set(err, SPATE_ENOENT, "no leader (empty node)");
    if ((m = ha__leader_info__unpack(NULL, len, data)) == NULL)
        return spate_error_set(err, SPATE_EPROTO, "%zu bytes that are no leader information", len);
    n = m->address ? strlen(m->address) : 0;
    if (m->session_id.len != ID_BYTES) {
        rc = spate_error_set(err, SPATE_EPROTO, "a session id of %zu bytes, not %d",
                             m->session_id.len, ID_BYTES);
        goto out;
    }
    if (n == 0 || n >= address_size) {
        rc = spate_error_set(err, SPATE_EPROTO, "an address of %zu bytes", n);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)m->address[i] <= ' ' || (unsigned char)m->address[i] >= 127) {
            rc = spate_error_set(err, SPATE_EPROTO, "an address with unprintable bytes");
            goto out;
        }
    }
    memcpy(session->bytes, m->session_id.data, ID_BYTES);
    memcpy(address, m->address, n + 1);
out:
    ha__leader_info__free_unpacked(m, NULL);
    return rc;
}

/* ---- files -------------------------------------------------------------------------------- */

int
ha_mkdirs(const char *dir, spate_error *err)
{
    return fs_mkdirs(dir, err);
}

/* Writes data to path through path.tmp, synced, renamed. */
static int
ha_write_atomic(const char *path, const uint8_t *data, size_t len, spate_error *err)
{
    char *tmp = xasprintf("%s.tmp", path);
    int fd, rc = 0;
    size_t off = 0;

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = spate_error_set(err, -errno, "cannot create '%s': %s", tmp, spate_strerror(-errno));
        goto out;
    }
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);

        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            rc = spate_error_set(err, -errno, "cannot write '%s': %s", tmp, spate_strerror(-errno));
            break;
        }
        off += (size_t)w;
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = spate_error_set(err, -errno, "cannot sync '%s': %s", tmp, spate_strerror(-errno));
    close(fd);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = spate_error_set(err, -errno, "cannot rename '%s': %s", tmp, spate_strerror(-errno));
    if (rc != 0)
        unlink(tmp);
out:
    free(tmp);
    return rc;
}

static int
ha_read_all(const char *path, uint8_t **data, size_t *len, spate_error *err)
{
    FILE *f = fopen(path, "rbe");
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;

    if (f == NULL)
        return spate_error_set(err, -errno, "cannot open '%s': %s", path, spate_strerror(-errno));
    for (;;) {
        size_t r;

        xgrow((void **)&buf, &cap, n + 65536, 1);
        r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        fclose(f);
        free(buf);
        return spate_error_set(err, SPATE_EIO, "cannot read '%s'", path);
    }
    fclose(f);
    *data = buf;
    *len = n;
    return 0;
}

int
ha_file_write(const char *dir, const char *prefix, const uint8_t *data, size_t len,
              uint8_t **pointer, size_t *pointer_len, spate_error *err)
{
    Ha__StatePointer p = HA__STATE_POINTER__INIT;
    uint8_t digest[SHA256_BYTES];
    spate_id r;
    char *path;
    int rc;

    if ((rc = ha_mkdirs(dir, err)) != 0)
        return rc;
    id_random(&r);
    path = xasprintf("%s/%s%s", dir, prefix, id_str(&r).s);
    if ((rc = ha_write_atomic(path, data, len, err)) != 0) {
        free(path);
        return rc;
    }
    sha256(data, len, digest);
    p.path = path;
    p.size = len;
    p.sha256.data = digest;
    p.sha256.len = SHA256_BYTES;
    *pointer_len = ha__state_pointer__get_packed_size(&p);
    *pointer = xmalloc(*pointer_len);
    ha__state_pointer__pack(&p, *pointer);
    free(path);
    return 0;
}

static int
ha_pointer_decode(const uint8_t *pointer, size_t pointer_len, Ha__StatePointer **out,
                  spate_error *err)
{
    Ha__StatePointer *p = ha__state_pointer__unpack(NULL, pointer_len, pointer);

    if (p == NULL || p->path == NULL || p->path[0] != '/' || p->sha256.len != SHA256_BYTES) {
        if (p != NULL)
            ha__state_pointer__free_unpacked(p, NULL);
        return spate_error_set(err, SPATE_EPROTO, "%zu bytes that are no state pointer",
                               pointer_len);
    }
    *out = p;
    return 0;
}

int
ha_file_read(const uint8_t *pointer, size_t pointer_len, uint8_t **data, size_t *len,
             spate_error *err)
{
    uint8_t digest[SHA256_BYTES];
    Ha__StatePointer *p;
    int rc;

    if ((rc = ha_pointer_decode(pointer, pointer_len, &p, err)) != 0)
        return rc;
    if ((rc = ha_read_all(p->path, data, len, err)) != 0)
        goto out;
    if (*len != p->size) {
        rc = spate_error_set(err, SPATE_EPROTO, "'%s' has %zu bytes, not %llu: truncated?", p->path,
                             *len, (unsigned long long)p->size);
    } else {
        sha256(*data, *len, digest);
        if (memcmp(digest, p->sha256.data, SHA256_BYTES) != 0)
            rc = spate_error_set(err, SPATE_EPROTO, "'%s' does not match its SHA-256", p->path);
    }
    if (rc != 0) {
        free(*data);
        *data = NULL;
    }
out:
    ha__state_pointer__free_unpacked(p, NULL);
    return rc;
}

int
ha_file_remove(const uint8_t *pointer, size_t pointer_len, spate_error *err)
{
    Ha__StatePointer *p;
    int rc;

    if ((rc = ha_pointer_decode(pointer, pointer_len, &p, err)) != 0)
        return rc;
    if (unlink(p->path) != 0 && errno != ENOENT)
        rc =
            spate_error_set(err, -errno, "cannot delete '%s': %s", p->path, spate_strerror(-errno));
    ha__state_pointer__free_unpacked(p, NULL);
    return rc;
}

/* ---- the file-based job result store -------------------------------------------------- */

struct file_jrs {
    struct job_result_store base;
    char *dir;
};

static char *
fjrs_path(struct file_jrs *s, const spate_id *job, bool dirty)
{
    return xasprintf("%s/%s%s.pb", s->dir, id_str(job).s, dirty ? "_DIRTY" : "");
}

static int
fjrs_create_dirty(struct job_result_store *base, const struct job_result *r, spate_error *err)
{
    struct file_jrs *s = (struct file_jrs *)base;
    Ha__JobResultRecord m = HA__JOB_RESULT_RECORD__INIT;
    char *path = fjrs_path(s, &r->job_id, true), *clean = fjrs_path(s, &r->job_id, false);
    uint8_t *buf;
    size_t len;
    int rc;

    if (access(path, F_OK) == 0 || access(clean, F_OK) == 0) {
        rc =
            spate_error_set(err, SPATE_EEXIST, "job %s has a result already", id_str(&r->job_id).s);
        goto out;
    }
    m.job_id.data = (uint8_t *)r->job_id.bytes;
    m.job_id.len = ID_BYTES;
    m.state = (char *)r->state;
    m.end_time = r->end_time;
    m.failure = r->failure ? r->failure : "";
    len = ha__job_result_record__get_packed_size(&m);
    buf = xmalloc(len ? len : 1);
    ha__job_result_record__pack(&m, buf);
    rc = ha_write_atomic(path, buf, len, err);
    free(buf);
out:
    free(path);
    free(clean);
    return rc;
}

static int
fjrs_mark_clean(struct job_result_store *base, const spate_id *job, spate_error *err)
{
    struct file_jrs *s = (struct file_jrs *)base;
    char *dirty = fjrs_path(s, job, true), *clean = fjrs_path(s, job, false);
    int rc = 0;

    if (rename(dirty, clean) != 0) {
        if (errno != ENOENT || access(clean, F_OK) != 0)
            rc = spate_error_set(err, errno == ENOENT ? SPATE_ENOENT : -errno,
                                 "cannot mark the result of job %s clean: %s", id_str(job).s,
                                 spate_strerror(-errno));
    }
    free(dirty);
    free(clean);
    return rc;
}

static int
fjrs_lookup(struct job_result_store *base, const spate_id *job, enum job_result_entry *out,
            spate_error *err)
{
    struct file_jrs *s = (struct file_jrs *)base;
    char *dirty = fjrs_path(s, job, true), *clean = fjrs_path(s, job, false);

    (void)err;
    if (access(clean, F_OK) == 0)
        *out = JOB_RESULT_CLEAN;
    else if (access(dirty, F_OK) == 0)
        *out = JOB_RESULT_DIRTY;
    else
        *out = JOB_RESULT_NONE;
    free(dirty);
    free(clean);
    return 0;
}

static int
fjrs_dirty_results(struct job_result_store *base, struct job_result **out, size_t *count,
                   spate_error *err)
{
    struct file_jrs *s = (struct file_jrs *)base;
    DIR *d = opendir(s->dir);
    struct dirent *e;
    size_t n = 0, cap = 0;

    *out = NULL;
    *count = 0;
    if (d == NULL)
        return errno == ENOENT ? 0
                               : spate_error_set(err, -errno, "cannot list '%s': %s", s->dir,
                                                 spate_strerror(-errno));
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        Ha__JobResultRecord *m;
        uint8_t *data;
        size_t len;
        char *path;
        spate_error ferr = { 0 };

        if (l < 9 || strcmp(e->d_name + l - 9, "_DIRTY.pb") != 0)
            continue;
        path = xasprintf("%s/%s", s->dir, e->d_name);
        if (ha_read_all(path, &data, &len, &ferr) != 0) {
            SPATE_LOG_WARN(HA_LOG, "skipping job result '%s': %s", path, ferr.message);
            free(path);
            continue;
        }
        m = ha__job_result_record__unpack(NULL, len, data);
        free(data);
        if (m == NULL || m->job_id.len != ID_BYTES || m->state == NULL) {
            SPATE_LOG_WARN(HA_LOG, "skipping job result '%s': not a job result", path);
            if (m != NULL)
                ha__job_result_record__free_unpacked(m, NULL);
            free(path);
            continue;
        }
        xgrow((void **)out, &cap, n + 1, sizeof **out);
        memset(&(*out)[n], 0, sizeof **out);
        memcpy((*out)[n].job_id.bytes, m->job_id.data, ID_BYTES);
        snprintf((*out)[n].state, sizeof(*out)[n].state, "%s", m->state);
        (*out)[n].end_time = m->end_time;
        (*out)[n].failure = m->failure && *m->failure ? xstrdup(m->failure) : NULL;
        n++;
        ha__job_result_record__free_unpacked(m, NULL);
        free(path);
    }
    closedir(d);
    *count = n;
    return 0;
}

static void
fjrs_free(struct job_result_store *base)
{
    struct file_jrs *s = (struct file_jrs *)base;

    free(s->dir);
    free(s);
}

static const struct job_result_store_ops fjrs_ops = {
    fjrs_create_dirty, fjrs_mark_clean, fjrs_lookup, fjrs_dirty_results, fjrs_free,
};

int
ha_file_job_result_store_new(const char *dir, struct job_result_store **out, spate_error *err)
{
    struct file_jrs *s;
    int rc;

    if ((rc = ha_mkdirs(dir, err)) != 0)
        return rc;
    s = xcalloc(1, sizeof *s);
    s->base.ops = &fjrs_ops;
    s->dir = xstrdup(dir);
    *out = &s->base;
    return 0;
}
