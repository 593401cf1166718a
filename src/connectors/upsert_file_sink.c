/* The upsert file sink (connector "upsert-filesystem", built in, behind the
 * plugin interface of connector_plugin.h so that named_sink.c runs it as it
 * runs Kafka's): an upsert changelog (key, value; a NULL value deletes the
 * key) compacted into one file, `<path>/compacted-0`, that holds the latest
 * value of every key, one line each in key order, deletes removed. The
 * file changes only when a checkpoint completes (or the input ends), to
 * the rows as of that checkpoint: exactly once. The committable of a
 * checkpoint is the whole compacted result (checkpoint id, then each key
 * and value), so that a restore writes the file again from the restored
 * checkpoint and starts its map from it, whatever the file held (a later
 * checkpoint's rows, after a restore from a savepoint). Memory and each
 * checkpoint ∝ the result's size. Parallelism 1: the one file holds every
 * key. Task thread only. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connectors/connectors_int.h"
#include "connectors/connector_plugin.h"
#include "core/alloc.h"
#include "core/fs.h"
#include "core/hmap.h"
#include "core/util.h"

struct row {
    struct hmap_node node;
    size_t key_len, value_len;
    uint8_t *key, *value;
};

/* A checkpoint's result, prepared, waiting for its completion. */
struct prepared {
    int64_t checkpoint_id;
    uint8_t *bytes; /* the committable */
    size_t len;
};

struct upsert_writer {
    char *path, *file, *tmp;
    struct hmap rows;
    struct prepared *pending;
    int npending;
    int64_t recovered; /* the checkpoint the map was restored from, -1: none */
};

static void
put(uint8_t **p, const void *src, size_t n)
{
    memcpy(*p, src, n);
    *p += n;
}

static struct row *
row_find(struct upsert_writer *w, const void *key, size_t len, uint64_t h)
{
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, h, &w->rows)
    {
        struct row *r = container_of(n, struct row, node);

        if (r->key_len == len && memcmp(r->key, key, len) == 0)
            return r;
    }
    return NULL;
}

static void
row_free(struct row *r)
{
    free(r->key);
    free(r->value);
    free(r);
}

static void
rows_clear(struct upsert_writer *w)
{
    struct hmap_node *n;

    while ((n = hmap_first(&w->rows)) != NULL) {
        hmap_remove(&w->rows, n);
        row_free(container_of(n, struct row, node));
    }
}

static void
upsert(struct upsert_writer *w, const void *key, size_t key_len, const void *value,
       size_t value_len)
{
    uint64_t h = hmap_hash_bytes(key, key_len);
    struct row *r = row_find(w, key, key_len, h);

    if (value == NULL) {
        if (r != NULL) {
            hmap_remove(&w->rows, &r->node);
            row_free(r);
        }
        return;
    }
    if (r == NULL) {
        r = xcalloc(1, sizeof *r);
        r->key = xmalloc(key_len + 1);
        memcpy(r->key, key, key_len);
        r->key_len = key_len;
        hmap_insert(&w->rows, &r->node, h);
    }
    free(r->value);
    r->value = xmalloc(value_len + 1);
    memcpy(r->value, value, value_len);
    r->value_len = value_len;
}

static int
row_cmp(const void *a, const void *b)
{
    const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;
    int c = memcmp(x->key, y->key, MIN(x->key_len, y->key_len));

    return c != 0 ? c : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* The committable of the map now: i64 checkpoint id, then u32 key length,
 * key, u32 value length, value for each row in key order. */
static uint8_t *
result_encode(struct upsert_writer *w, int64_t checkpoint_id, size_t *len)
{
    size_t n = 0, total = 8;
    struct row **all = xcalloc(hmap_count(&w->rows) + 1, sizeof *all);
    struct hmap_node *node;
    uint8_t *bytes, *p;

    HMAP_FOR_EACH(node, &w->rows)
    {
        all[n] = container_of(node, struct row, node);
        total += 8 + all[n]->key_len + all[n]->value_len;
        n++;
    }
    qsort(all, n, sizeof *all, row_cmp);
    p = bytes = xmalloc(total);
    put(&p, &checkpoint_id, 8);
    for (size_t i = 0; i < n; i++) {
        uint32_t kl = (uint32_t)all[i]->key_len, vl = (uint32_t)all[i]->value_len;

        put(&p, &kl, 4);
        put(&p, all[i]->key, kl);
        put(&p, &vl, 4);
        put(&p, all[i]->value, vl);
    }
    free(all);
    *len = total;
    return bytes;
}

/* Calls row(key, value) for each row of a committable; -1 when it is
 * malformed. */
static int
result_walk(const uint8_t *p, size_t len, struct upsert_writer *w,
            void (*row)(struct upsert_writer *, const uint8_t *, size_t, const uint8_t *, size_t))
{
    const uint8_t *end = p + len;

    if (len < 8)
        return -1;
    for (p += 8; p < end;) {
        uint32_t kl, vl;
        const uint8_t *k;

        if (end - p < 4 || (memcpy(&kl, p, 4), (size_t)(end - p - 4) < kl))
            return -1;
        k = p + 4;
        p = k + kl;
        if (end - p < 4 || (memcpy(&vl, p, 4), (size_t)(end - p - 4) < vl))
            return -1;
        if (row != NULL)
            row(w, k, kl, p + 4, vl);
        p += 4 + vl;
    }
    return 0;
}

static void
row_upsert(struct upsert_writer *w, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    upsert(w, k, kl, v, vl);
}

static int
fail(char *err, size_t errlen, const char *what, const char *path)
{
    snprintf(err, errlen, "upsert file sink: cannot %s '%s': %s", what, path, strerror(errno));
    return -1;
}

/* The file becomes the committable's rows, through a hidden file renamed
 * over it: a reader sees the old result or the new one. */
static int
result_write(struct upsert_writer *w, const uint8_t *bytes, size_t len, char *err, size_t errlen)
{
    const uint8_t *p = bytes + 8, *end = bytes + len;
    FILE *f = fopen(w->tmp, "w");
    int rc = 0;

    if (f == NULL)
        return fail(err, errlen, "create", w->tmp);
    while (p < end) {
        uint32_t kl, vl;

        memcpy(&kl, p, 4);
        p += 4 + kl;
        memcpy(&vl, p, 4);
        p += 4;
        if (fwrite(p, 1, vl, f) != vl || fputc('\n', f) == EOF)
            break;
        p += vl;
    }
    if (p != end || fflush(f) != 0 || fsync(fileno(f)) != 0)
        rc = fail(err, errlen, "write", w->tmp);
    if (fclose(f) != 0 && rc == 0)
        rc = fail(err, errlen, "write", w->tmp);
    if (rc == 0 && rename(w->tmp, w->file) != 0)
        rc = fail(err, errlen, "rename into", w->file);
    if (rc != 0)
        unlink(w->tmp);
    return rc;
}

static void *
uw_open(const struct connector_context *ctx, char *err, size_t errlen)
{
    struct upsert_writer *w;
    const char *path = NULL;
    spate_error e;

    for (size_t i = 0; i < ctx->noptions; i++) {
        const char *k = ctx->options[2 * i];

        if (strcmp(k, "path") == 0) {
            path = ctx->options[2 * i + 1];
        } else {
            snprintf(err, errlen, "upsert file sink: unknown option '%s' (it has 'path')", k);
            return NULL;
        }
    }
    if (path == NULL || *path == '\0') {
        snprintf(err, errlen, "upsert file sink: needs 'path' (the folder of its file)");
        return NULL;
    }
    if (ctx->parallelism != 1) {
        snprintf(err, errlen,
                 "upsert file sink: runs at parallelism 1 (its one file holds every key), "
                 "not %d",
                 ctx->parallelism);
        return NULL;
    }
    if (fs_mkdirs(path, &e) != 0) {
        snprintf(err, errlen, "upsert file sink: %s", e.message);
        return NULL;
    }
    w = xcalloc(1, sizeof *w);
    w->path = xstrdup(path);
    w->file = xasprintf("%s/compacted-0", path);
    w->tmp = xasprintf("%s/.compacted-0.tmp", path);
    w->recovered = -1;
    hmap_init(&w->rows);
    return w;
}

/* A committable of the restored checkpoint: its checkpoint completed, so
 * the file becomes its rows, and so does the map (the latest checkpoint's
 * when there are several). */
static int
uw_recover(void *writer, const void *committable, size_t len, char *err, size_t errlen)
{
    struct upsert_writer *w = writer;
    int64_t id;

    if (result_walk(committable, len, w, NULL) != 0) {
        snprintf(err, errlen, "upsert file sink: a restored committable of %zu bytes is malformed",
                 len);
        return -1;
    }
    memcpy(&id, committable, 8);
    if (id < w->recovered)
        return 0;
    w->recovered = id;
    rows_clear(w);
    result_walk(committable, len, w, row_upsert);
    return result_write(w, committable, len, err, errlen);
}

static int
uw_write(void *writer, const void *key, size_t key_len, const void *value, size_t value_len,
         int64_t timestamp_ms, char *err, size_t errlen)
{
    UNUSED(timestamp_ms);
    UNUSED(err);
    UNUSED(errlen);
    upsert(writer, key, key_len, value, value_len);
    return 0;
}

static int
uw_prepare_commit(void *writer, int64_t checkpoint_id, connector_add_fn *add, void *arg, char *err,
                  size_t errlen)
{
    struct upsert_writer *w = writer;
    struct prepared *p;

    UNUSED(err);
    UNUSED(errlen);
    w->pending = xrealloc(w->pending, ((size_t)w->npending + 1) * sizeof *w->pending);
    p = &w->pending[w->npending++];
    p->checkpoint_id = checkpoint_id;
    p->bytes = result_encode(w, checkpoint_id, &p->len);
    add(arg, p->bytes, p->len);
    return 0;
}

/* Checkpoint checkpoint_id completed: the file becomes the latest result
 * prepared up to it. */
static int
uw_commit(void *writer, int64_t checkpoint_id, char *err, size_t errlen)
{
    struct upsert_writer *w = writer;
    int last = -1, rc = 0, k = 0;

    for (int i = 0; i < w->npending; i++)
        if (w->pending[i].checkpoint_id <= checkpoint_id)
            last = i;
    if (last >= 0)
        rc = result_write(w, w->pending[last].bytes, w->pending[last].len, err, errlen);
    if (rc != 0)
        return rc;
    for (int i = 0; i < w->npending; i++) {
        if (w->pending[i].checkpoint_id <= checkpoint_id)
            free(w->pending[i].bytes);
        else
            w->pending[k++] = w->pending[i];
    }
    w->npending = k;
    return 0;
}

static int
uw_finish(void *writer, char *err, size_t errlen)
{
    struct upsert_writer *w = writer;
    size_t len;
    uint8_t *bytes = result_encode(w, INT64_MAX, &len);
    int rc = result_write(w, bytes, len, err, errlen);

    free(bytes);
    return rc;
}

static void
uw_close(void *writer)
{
    struct upsert_writer *w = writer;

    rows_clear(w);
    hmap_release(&w->rows);
    for (int i = 0; i < w->npending; i++)
        free(w->pending[i].bytes);
    free(w->pending);
    free(w->path);
    free(w->file);
    free(w->tmp);
    free(w);
}

static const struct connector_sink_ops upsert_file_sink_ops = {
    .open = uw_open,
    .recover = uw_recover,
    .write = uw_write,
    .prepare_commit = uw_prepare_commit,
    .commit = uw_commit,
    .finish = uw_finish,
    .close = uw_close,
};

const struct connector_plugin upsert_file_sink_plugin = {
    .abi_version = CONNECTOR_ABI_VERSION,
    .name = "upsert-filesystem",
    .sink = &upsert_file_sink_ops,
};
