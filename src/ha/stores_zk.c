/* The ZooKeeper stores (stores.h): a pointer (ha.proto's StatePointer) in a
 * znode, the entry in a file under <storageDir>/<cluster-id>, as Flink's
 * ZooKeeperStateHandleStore; the checkpoint id counter is a znode of its
 * own, changed by compare-and-set. Calls block; any thread but ZooKeeper's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "ha/ha_int.h"
#include "proto/ha.pb-c.h"

/* Layout under <root>: jobgraphs/<jobid>; jobs/<jobid>/checkpoints/<id, 19
 * digits>; jobs/<jobid>/checkpoint_id_counter (8 bytes, big-endian). */

#define ZS_ERR(err, rc, errbuf) spate_error_set((err), (rc), "%s", (errbuf))

static int
zs_need_storage(struct zk_ha *ha, spate_error *err)
{
    if (zk_ha_storage(ha) == NULL)
        return spate_error_set(err, SPATE_ECONFIG,
                               "high-availability.storageDir must be set for "
                               "high-availability.type zookeeper");
    return 0;
}

/* Reads the pointer in path and the file it names. */
static int
zs_read_entry(struct zk_ha *ha, const char *path, uint8_t **data, size_t *len, spate_error *err)
{
    char errbuf[SPATE_ERROR_MESSAGE_MAX];
    uint8_t *ptr;
    size_t plen;
    int rc;

    rc = zk_ha_plugin(ha)->get(zk_ha_client(ha), path, 0, &ptr, &plen, NULL, errbuf, sizeof errbuf);
    if (rc != 0)
        return ZS_ERR(err, rc, errbuf);
    rc = ha_file_read(ptr, plen, data, len, err);
    free(ptr);
    if (rc != 0)
        return spate_error_wrap(err, "entry '%s'", path);
    return 0;
}

/* Writes data to a new file and path to point at it (created, or replaced:
 * the old file is then deleted). */
static int
zs_write_entry(struct zk_ha *ha, const char *path, const char *prefix, const uint8_t *data,
               size_t len, spate_error *err)
{
    const struct coord_plugin *zk = zk_ha_plugin(ha);
    char errbuf[SPATE_ERROR_MESSAGE_MAX];
    uint8_t *ptr, *old = NULL;
    size_t plen, olen = 0;
    int32_t version = -1;
    int rc;

    if ((rc = ha_file_write(zk_ha_storage(ha), prefix, data, len, &ptr, &plen, err)) != 0)
        return rc;
    rc = zk->get(zk_ha_client(ha), path, 0, &old, &olen, &version, errbuf, sizeof errbuf);
    if (rc == 0)
        rc = zk->set(zk_ha_client(ha), path, ptr, plen, version, errbuf, sizeof errbuf);
    else if (rc == SPATE_ENOENT)
        rc = zk->create(zk_ha_client(ha), path, ptr, plen, 0, NULL, 0, errbuf, sizeof errbuf);
    if (rc != 0) {
        ha_file_remove(ptr, plen, NULL);
        free(ptr);
        free(old);
        return ZS_ERR(err, rc, errbuf);
    }
    if (old != NULL && ha_file_remove(old, olen, NULL) != 0)
        SPATE_LOG_WARN(HA_LOG, "the replaced entry of '%s' pointed to no file", path);
    free(old);
    free(ptr);
    return 0;
}

/* Deletes path and the file it points to; a missing node is fine. */
static int
zs_remove_entry(struct zk_ha *ha, const char *path, spate_error *err)
{
    const struct coord_plugin *zk = zk_ha_plugin(ha);
    char errbuf[SPATE_ERROR_MESSAGE_MAX];
    uint8_t *ptr = NULL;
    size_t plen = 0;
    int32_t version = -1;
    spate_error ferr = { 0 };
    int rc;

    rc = zk->get(zk_ha_client(ha), path, 0, &ptr, &plen, &version, errbuf, sizeof errbuf);
    if (rc == SPATE_ENOENT)
        return 0;
    if (rc != 0)
        return ZS_ERR(err, rc, errbuf);
    rc = zk->remove(zk_ha_client(ha), path, version, errbuf, sizeof errbuf);
    if (rc != 0 && rc != SPATE_ENOENT) {
        free(ptr);
        return ZS_ERR(err, rc, errbuf);
    }
    if (ha_file_remove(ptr, plen, &ferr) != 0)
        SPATE_LOG_WARN(HA_LOG, "removed '%s', but not its file: %s", path, ferr.message);
    free(ptr);
    return 0;
}

/* ---- job graphs ------------------------------------------------------------------- */

struct zk_jgs {
    struct job_graph_store base;
    struct zk_ha *ha;
    char *dir;
};

static int
zjgs_put(struct job_graph_store *base, const struct job_graph_record *r, spate_error *err)
{
    struct zk_jgs *s = (struct zk_jgs *)base;
    Ha__JobGraphRecord m = HA__JOB_GRAPH_RECORD__INIT;
    char *path = xasprintf("%s/%s", s->dir, id_str(&r->job_id).s);
    uint8_t *buf;
    size_t len;
    int rc;

    m.job_id.data = (uint8_t *)r->job_id.bytes;
    m.job_id.len = ID_BYTES;
    m.kind = r->kind ? r->kind : "";
    m.payload.data = r->data;
    m.payload.len = r->len;
    len = ha__job_graph_record__get_packed_size(&m);
    buf = xmalloc(len ? len : 1);
    ha__job_graph_record__pack(&m, buf);
    rc = zs_write_entry(s->ha, path, "submittedJobGraph", buf, len, err);
    free(buf);
    free(path);
    return rc;
}

static int
zjgs_get(struct job_graph_store *base, const spate_id *job, struct job_graph_record *out,
         spate_error *err)
{
    struct zk_jgs *s = (struct zk_jgs *)base;
    char *path = xasprintf("%s/%s", s->dir, id_str(job).s);
    Ha__JobGraphRecord *m;
    uint8_t *data;
    size_t len;
    int rc;

    if ((rc = zs_read_entry(s->ha, path, &data, &len, err)) != 0)
        goto out;
    m = ha__job_graph_record__unpack(NULL, len, data);
    free(data);
    if (m == NULL || m->job_id.len != ID_BYTES || memcmp(m->job_id.data, job->bytes, ID_BYTES)) {
        rc = spate_error_set(err, SPATE_EPROTO, "entry '%s' holds no job graph of job %s", path,
                             id_str(job).s);
        if (m != NULL)
            ha__job_graph_record__free_unpacked(m, NULL);
        goto out;
    }
    out->job_id = *job;
    out->kind = xstrdup(m->kind ? m->kind : "");
    out->len = m->payload.len;
    out->data = xmalloc(out->len ? out->len : 1);
    if (out->len)
        memcpy(out->data, m->payload.data, out->len);
    ha__job_graph_record__free_unpacked(m, NULL);
out:
    free(path);
    return rc;
}

static int
zjgs_job_ids(struct job_graph_store *base, spate_id **ids, size_t *count, spate_error *err)
{
    struct zk_jgs *s = (struct zk_jgs *)base;
    char errbuf[SPATE_ERROR_MESSAGE_MAX];
    char **names;
    size_t n, k = 0;
    int rc;

    rc = zk_ha_plugin(s->ha)->children(zk_ha_client(s->ha), s->dir, 0, &names, &n, errbuf,
                                       sizeof errbuf);
    if (rc == SPATE_ENOENT) {
        *ids = xcalloc(1, sizeof **ids);
        *count = 0;
        return 0;
    }
    if (rc != 0)
        return ZS_ERR(err, rc, errbuf);
    *ids = xcalloc(n ? n : 1, sizeof **ids);
    for (size_t i = 0; i < n; i++) {
        if (id_parse(names[i], &(*ids)[k], NULL) == 0)
            k++;
        else
            SPATE_LOG_WARN(HA_LOG, "ignoring '%s/%s': not a job id", s->dir, names[i]);
        free(names[i]);
    }
    free(names);
    *count = k;
    return 0;
}

static int
zjgs_remove(struct job_graph_store *base, const spate_id *job, spate_error *err)
{
    struct zk_jgs *s = (struct zk_jgs *)base;
    char *path = xasprintf("%s/%s", s->dir, id_str(job).s);
    int rc = zs_remove_entry(s->ha, path, err);

    free(path);
    return rc;
}

static void
zjgs_free(struct job_graph_store *base)
{
    struct zk_jgs *s = (struct zk_jgs *)base;

    free(s->dir);
    free(s);
}

static const struct job_graph_store_ops zjgs_ops = { zjgs_put, zjgs_get, zjgs_job_ids, zjgs_remove,
                                                     zjgs_free };

int
zk_job_graph_store_new(struct zk_ha *ha, struct job_graph_store **out, spate_error *err)
{
    struct zk_jgs *s;
    char *dir;
    int rc;

    if ((rc = zs_need_storage(ha, err)) != 0)
        return rc;
    dir = xasprintf("%s/jobgraphs", zk_ha_root(ha));
    if ((rc = zk_ha_ensure_path(ha, dir, err)) != 0) {
        free(dir);
        return rc;
    }
    s = xcalloc(1, sizeof *s);
    s->base.ops = &zjgs_ops;
    s->ha = ha;
    s->dir = dir;
    *out = &s->base;
    return 0;
}

/* ---- completed checkpoints -------------------------------------------------------------- */

struct zk_ccs {
    struct completed_checkpoint_store base;
    struct zk_ha *ha;
    spate_id job;
    uint32_t max_retained;
    char *job_dir, *dir;
};

static int
zccs_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Ids of the checkpoint nodes, oldest first; nodes that are no id are
 * skipped with a log line. */
static int
zccs_list(struct zk_ccs *s, uint64_t **ids, size_t *count, spate_error *err)
{
    char errbuf[SPATE_ERROR_MESSAGE_MAX];
    char **names;
    size_t n, k = 0;
    int rc;

    rc = zk_ha_plugin(s->ha)->children(zk_ha_client(s->ha), s->dir, 0, &names, &n, errbuf,
                                       sizeof errbuf);
    if (rc == SPATE_ENOENT) {
        *ids = xcalloc(1, sizeof **ids);
        *count = 0;
        return 0;
    }
    if (rc != 0)
        return ZS_ERR(err, rc, errbuf);
    *ids = xcalloc(n ? n : 1, sizeof **ids);
    for (size_t i = 0; i < n; i++) {
        char *end;
        unsigned long long v = strtoull(names[i], &end, 10);

        if (*names[i] != '\0' && *end == '\0')
            (*ids)[k++] = v;
        else
            SPATE_LOG_WARN(HA_LOG, "ignoring '%s/%s': not a checkpoint id", s->dir, names[i]);
        free(names[i]);
    }
    free(names);
    qsort(*ids, k, sizeof **ids, zccs_cmp);
    *count = k;
    return 0;
}

static char *
zccs_path(struct zk_ccs *s, uint64_t id)
{
    return xasprintf("%s/%019llu", s->dir, (unsigned long long)id);
}

static int
zccs_add(struct completed_checkpoint_store *base, const struct completed_checkpoint *c,
         spate_error *err)
{
    struct zk_ccs *s = (struct zk_ccs *)base;
    Ha__CheckpointRecord m = HA__CHECKPOINT_RECORD__INIT;
    char *path = zccs_path(s, c->id);
    uint64_t *ids = NULL;
    size_t n = 0, len;
    uint8_t *buf;
    int rc;

    m.job_id.data = (uint8_t *)s->job.bytes;
    m.job_id.len = ID_BYTES;
    m.checkpoint_id = c->id;
    m.metadata.data = c->metadata;
    m.metadata.len = c->len;
    len = ha__checkpoint_record__get_packed_size(&m);
    buf = xmalloc(len ? len : 1);
    ha__checkpoint_record__pack(&m, buf);
    if ((rc = zk_ha_ensure_path(s->ha, s->dir, err)) == 0)
        rc = zs_write_entry(s->ha, path, "completedCheckpoint", buf, len, err);
    free(buf);
    free(path);
    if (rc != 0)
        return rc;
    /* Subsume the oldest beyond max_retained. */
    if (zccs_list(s, &ids, &n, err) != 0)
        return 0; /* added; the clean-up waits for the next one */
    for (size_t i = 0; i + s->max_retained < n; i++) {
        spate_error rerr = { 0 };
        char *old = zccs_path(s, ids[i]);

        if (zs_remove_entry(s->ha, old, &rerr) != 0)
            SPATE_LOG_WARN(HA_LOG, "cannot drop subsumed checkpoint %llu of job %s: %s",
                           (unsigned long long)ids[i], id_str(&s->job).s, rerr.message);
        free(old);
    }
    free(ids);
    return 0;
}

static int
zccs_latest(struct completed_checkpoint_store *base, struct completed_checkpoint *out,
            spate_error *err)
{
    struct zk_ccs *s = (struct zk_ccs *)base;
    uint64_t *ids;
    size_t n;
    int rc;

    if ((rc = zccs_list(s, &ids, &n, err)) != 0)
        return rc;
    /* Newest first; an entry that cannot be read is skipped with a log
     * line, and the one before it is the latest. */
    for (size_t i = n; i-- > 0;) {
        char *path = zccs_path(s, ids[i]);
        Ha__CheckpointRecord *m = NULL;
        spate_error rerr = { 0 };
        uint8_t *data;
        size_t len;

        if (zs_read_entry(s->ha, path, &data, &len, &rerr) == 0) {
            m = ha__checkpoint_record__unpack(NULL, len, data);
            free(data);
            if (m == NULL || m->checkpoint_id != ids[i] || m->job_id.len != ID_BYTES ||
                memcmp(m->job_id.data, s->job.bytes, ID_BYTES) != 0) {
                spate_error_set(&rerr, SPATE_EPROTO, "entry '%s' holds no checkpoint %llu", path,
                                (unsigned long long)ids[i]);
                if (m != NULL)
                    ha__checkpoint_record__free_unpacked(m, NULL);
                m = NULL;
            }
        }
        free(path);
        if (m == NULL) {
            SPATE_LOG_WARN(HA_LOG, "skipping checkpoint %llu of job %s: %s",
                           (unsigned long long)ids[i], id_str(&s->job).s, rerr.message);
            continue;
        }
        out->id = m->checkpoint_id;
        out->len = m->metadata.len;
        out->metadata = xmalloc(out->len ? out->len : 1);
        if (out->len)
            memcpy(out->metadata, m->metadata.data, out->len);
        ha__checkpoint_record__free_unpacked(m, NULL);
        free(ids);
        return 0;
    }
    free(ids);
    return spate_error_set(err, SPATE_ENOENT, "no completed checkpoint of job %s",
                           id_str(&s->job).s);
}

static int
zccs_ids(struct completed_checkpoint_store *base, uint64_t **ids, size_t *count, spate_error *err)
{
    return zccs_list((struct zk_ccs *)base, ids, count, err);
}

static int
zccs_shutdown(struct completed_checkpoint_store *base, bool globally_terminal, spate_error *err)
{
    struct zk_ccs *s = (struct zk_ccs *)base;
    char errbuf[SPATE_ERROR_MESSAGE_MAX];
    uint64_t *ids;
    size_t n;
    int rc;

    if (!globally_terminal)
        return 0; /* another leader recovers them */
    if ((rc = zccs_list(s, &ids, &n, err)) != 0)
        return rc;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *path = zccs_path(s, ids[i]);

        rc = zs_remove_entry(s->ha, path, err);
        free(path);
    }
    free(ids);
    if (rc == 0) {
        zk_ha_plugin(s->ha)->remove(zk_ha_client(s->ha), s->dir, -1, errbuf, sizeof errbuf);
        zk_ha_plugin(s->ha)->remove(zk_ha_client(s->ha), s->job_dir, -1, errbuf, sizeof errbuf);
    }
    return rc;
}

static void
zccs_free(struct completed_checkpoint_store *base)
{
    struct zk_ccs *s = (struct zk_ccs *)base;

    free(s->job_dir);
    free(s->dir);
    free(s);
}

static const struct completed_checkpoint_store_ops zccs_ops = { zccs_add, zccs_latest, zccs_ids,
                                                                zccs_shutdown, zccs_free };

int
zk_checkpoint_store_new(struct zk_ha *ha, const spate_id *job, uint32_t max_retained,
                        struct completed_checkpoint_store **out, spate_error *err)
{
    struct zk_ccs *s;
    int rc;

    if ((rc = zs_need_storage(ha, err)) != 0)
        return rc;
    s = xcalloc(1, sizeof *s);
    s->base.ops = &zccs_ops;
    s->ha = ha;
    s->job = *job;
    s->max_retained = max_retained ? max_retained : 1;
    s->job_dir = xasprintf("%s/jobs/%s", zk_ha_root(ha), id_str(job).s);
    s->dir = xasprintf("%s/checkpoints", s->job_dir);
    *out = &s->base;
    return 0;
}

/* ---- the checkpoint id counter ------------------------------------------------------------ */

struct zk_counter {
    struct checkpoint_id_counter base;
    struct zk_ha *ha;
    spate_id job;
    char *path;
};

static void
zctr_encode(uint64_t v, uint8_t out[8])
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (uint8_t)v;
}

/* Reads the counter (created at 1 when missing) and its version. */
static int
zctr_read(struct zk_counter *c, uint64_t *value, int32_t *version, spate_error *err)
{
    const struct coord_plugin *zk = zk_ha_plugin(c->ha);
    char errbuf[SPATE_ERROR_MESSAGE_MAX];
    uint8_t *data, init[8];
    size_t len;
    int rc;

    for (;;) {
        rc = zk->get(zk_ha_client(c->ha), c->path, 0, &data, &len, version, errbuf, sizeof errbuf);
        if (rc == 0)
            break;
        if (rc != SPATE_ENOENT)
            return ZS_ERR(err, rc, errbuf);
        zctr_encode(1, init);
        rc = zk->create(zk_ha_client(c->ha), c->path, init, sizeof init, 0, NULL, 0, errbuf,
                        sizeof errbuf);
        if (rc != 0 && rc != SPATE_EEXIST)
            return ZS_ERR(err, rc, errbuf);
    }
    if (len != 8) {
        free(data);
        return spate_error_set(err, SPATE_EPROTO,
                               "checkpoint id counter '%s' holds %zu bytes, not 8", c->path, len);
    }
    *value = 0;
    for (int i = 0; i < 8; i++)
        *value = *value << 8 | data[i];
    free(data);
    return 0;
}

static int
zctr_get_and_increment(struct checkpoint_id_counter *base, uint64_t *out, spate_error *err)
{
    struct zk_counter *c = (struct zk_counter *)base;
    char errbuf[SPATE_ERROR_MESSAGE_MAX];

    for (;;) {
        uint64_t v;
        int32_t version;
        uint8_t next[8];
        int rc;

        if ((rc = zctr_read(c, &v, &version, err)) != 0)
            return rc;
        zctr_encode(v + 1, next);
        rc = zk_ha_plugin(c->ha)->set(zk_ha_client(c->ha), c->path, next, sizeof next, version,
                                      errbuf, sizeof errbuf);
        if (rc == SPATE_EAGAIN)
            continue; /* someone else counted: again */
        if (rc != 0)
            return ZS_ERR(err, rc, errbuf);
        *out = v;
        return 0;
    }
}

static int
zctr_get(struct checkpoint_id_counter *base, uint64_t *out, spate_error *err)
{
    int32_t version;

    return zctr_read((struct zk_counter *)base, out, &version, err);
}

static int
zctr_set(struct checkpoint_id_counter *base, uint64_t value, spate_error *err)
{
    struct zk_counter *c = (struct zk_counter *)base;
    char errbuf[SPATE_ERROR_MESSAGE_MAX];
    uint64_t v;
    int32_t version;
    uint8_t data[8];
    int rc;

    if ((rc = zctr_read(c, &v, &version, err)) != 0)
        return rc;
    zctr_encode(value, data);
    rc = zk_ha_plugin(c->ha)->set(zk_ha_client(c->ha), c->path, data, sizeof data, -1, errbuf,
                                  sizeof errbuf);
    return rc != 0 ? ZS_ERR(err, rc, errbuf) : 0;
}

static int
zctr_shutdown(struct checkpoint_id_counter *base, bool globally_terminal, spate_error *err)
{
    struct zk_counter *c = (struct zk_counter *)base;
    char errbuf[SPATE_ERROR_MESSAGE_MAX];
    int rc;

    if (!globally_terminal)
        return 0;
    rc = zk_ha_plugin(c->ha)->remove(zk_ha_client(c->ha), c->path, -1, errbuf, sizeof errbuf);
    return rc != 0 && rc != SPATE_ENOENT ? ZS_ERR(err, rc, errbuf) : 0;
}

static void
zctr_free(struct checkpoint_id_counter *base)
{
    struct zk_counter *c = (struct zk_counter *)base;

    free(c->path);
    free(c);
}

static const struct checkpoint_id_counter_ops zctr_ops = {
    zctr_get_and_increment, zctr_get, zctr_set, zctr_shutdown, zctr_free,
};

int
zk_checkpoint_id_counter_new(struct zk_ha *ha, const spate_id *job,
                             struct checkpoint_id_counter **out, spate_error *err)
{
    struct zk_counter *c = xcalloc(1, sizeof *c);
    char *dir = xasprintf("%s/jobs/%s", zk_ha_root(ha), id_str(job).s);
    int rc = zk_ha_ensure_path(ha, dir, err);

    free(dir);
    if (rc != 0) {
        free(c);
        return rc;
    }
    c->base.ops = &zctr_ops;
    c->ha = ha;
    c->job = *job;
    c->path = xasprintf("%s/jobs/%s/checkpoint_id_counter", zk_ha_root(ha), id_str(job).s);
    *out = &c->base;
    return 0;
}
