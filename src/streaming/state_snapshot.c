/* Checkpoints of a task's operator chain (state_snapshot.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/util.h"
#include "streaming/state_snapshot.h"
#include "streaming/types.h"

#define SNAPSHOT_MAGIC   "SPST"
#define SNAPSHOT_VERSION 1u
/* The name of the element an operator keeps itself (operator.h's
 * snapshot_state) among its operator state. */
#define OWN_STATE "__operator"

struct op_snapshot {
    spate_id operator_id;
    int subtask;
    bool has_keyed;
    struct keyed_backend_snapshot kb;
    bool has_own;
    bool own_union; /* the operator's own state is union list state */
    struct byte_buf own;
};

void
op_state_add(struct byte_buf *out, const void *bytes, size_t len)
{
    uint32_t n = (uint32_t)len;

    if (out->len + 4 + len > out->cap) {
        out->cap = (out->len + 4 + len) * 2;
        out->data = xrealloc(out->data, out->cap);
    }
    memcpy(out->data + out->len, &n, 4);
    memcpy(out->data + out->len + 4, bytes, len);
    out->len += 4 + len;
}

/* ---- the synchronous part ---- */

struct task_snapshot *
task_snapshot_take(const struct operator_chain *chain, const struct jg_vertex *v,
                   int64_t checkpoint_id, int64_t timestamp, const char *path, spate_error *err)
{
    struct task_snapshot *s;
    uint64_t t0 = clock_mono_ns();

    /* No state is left out without a word: a checkpoint that would miss
     * some is refused, naming the operator. */
    for (int i = 0; i < chain->nops; i++)
        if (operator_check_state(chain->ops[i], err) != 0)
            return NULL;
    s = xcalloc(1, sizeof *s);

    s->checkpoint_id = checkpoint_id;
    s->timestamp = timestamp;
    s->path = xstrdup(path);
    s->ops = xcalloc((size_t)chain->nops + 1, sizeof *s->ops);
    for (int i = 0; i < chain->nops; i++) {
        struct stream_operator *op = chain->ops[i];
        struct op_snapshot *os = &s->ops[s->nops];

        if (op->backend == NULL && op->vt->snapshot_state == NULL)
            continue;
        os->operator_id = v->ops[i].operator_id;
        os->subtask = op->task->subtask;
        if (op->backend != NULL) {
            keyed_backend_snapshot(heap_keyed_backend_of(op->backend), &os->kb);
            os->has_keyed = true;
        }
        if (op->vt->snapshot_state != NULL) {
            op->vt->snapshot_state(op, checkpoint_id, &os->own);
            os->has_own = true;
            os->own_union = op->vt->own_state_union;
        }
        s->nops++;
    }
    s->sync_ns = clock_mono_ns() - t0;
    return s;
}

void
task_snapshot_free(struct task_snapshot *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < s->nops; i++) {
        if (s->ops[i].has_keyed)
            keyed_backend_snapshot_release(&s->ops[i].kb);
        free(s->ops[i].own.data);
    }
    free(s->ops);
    free(s->path);
    free(s);
}

/* ---- the asynchronous part ---- */

/* A file being written through a buffer of SNAPSHOT_WRITE_BUFFER bytes
 * (entries go straight into it, a write(2) per buffer), with its offset
 * and its first error. The task's snapshot thread alone writes it. */
struct sfile {
    int fd;
    uint8_t *buf;
    size_t used;
    uint64_t off;
    int error; /* errno of the first failed write */
};

/* Bytes of state file written per write(2). */
#define SNAPSHOT_WRITE_BUFFER (1 << 20)

static void
sf_write(struct sfile *sf, const uint8_t *p, size_t n)
{
    while (sf->error == 0 && n > 0) {
        ssize_t w = write(sf->fd, p, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            sf->error = w < 0 ? errno : EIO;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void
sf_flush(struct sfile *sf)
{
    sf_write(sf, sf->buf, sf->used);
    sf->used = 0;
}

/* Room for n bytes in the buffer (which counts them written), or NULL
 * when n is more than a buffer holds. */
static inline uint8_t *
sf_room(struct sfile *sf, size_t n)
{
    uint8_t *at;

    if (n > SNAPSHOT_WRITE_BUFFER - sf->used) {
        sf_flush(sf);
        if (n > SNAPSHOT_WRITE_BUFFER)
            return NULL;
    }
    at = sf->buf + sf->used;
    sf->used += n;
    sf->off += n;
    return at;
}

static void
sf_put(struct sfile *sf, const void *p, size_t n)
{
    uint8_t *at = sf_room(sf, n);

    if (at != NULL) {
        memcpy(at, p, n);
        return;
    }
    sf_write(sf, p, n);
    sf->off += n;
}

static void
sf_u32(struct sfile *sf, uint32_t v)
{
    sf_put(sf, &v, 4);
}

static void
sf_u64(struct sfile *sf, uint64_t v)
{
    sf_put(sf, &v, 8);
}

static bool
scope_keyed(const struct state_descriptor *d)
{
    return d->scope == SCOPE_KEYED;
}

static Checkpoint__DistributionMode
scope_mode(enum state_scope scope)
{
    switch (scope) {
    case SCOPE_UNION:
        return CHECKPOINT__DISTRIBUTION_MODE__UNION;
    case SCOPE_BROADCAST:
        return CHECKPOINT__DISTRIBUTION_MODE__BROADCAST;
    default:
        return CHECKPOINT__DISTRIBUTION_MODE__SPLIT_DISTRIBUTE;
    }
}

/* An entry: its hash, key length, key, value length and value, put
 * together in the buffer. */
static void
sf_entry(struct sfile *sf, const struct state_entry *e)
{
    uint32_t klen = state_entry_key_len(e), vlen = e->value_len;
    uint8_t *at = sf_room(sf, 16 + (size_t)klen + vlen);

    if (at == NULL) {
        sf_u64(sf, e->hash);
        sf_u32(sf, klen);
        sf_put(sf, state_entry_key(e), klen);
        sf_u32(sf, vlen);
        sf_put(sf, state_entry_value(e), vlen);
        return;
    }
    memcpy(at, &e->hash, 8);
    memcpy(at + 8, &klen, 4);
    memcpy(at + 12, state_entry_key(e), klen);
    memcpy(at + 12 + klen, &vlen, 4);
    memcpy(at + 16 + klen, state_entry_value(e), vlen);
}

static size_t
count_keyed(const struct keyed_backend_snapshot *kb)
{
    size_t n = 0;

    for (int i = 0; i < kb->nstates; i++)
        n += scope_keyed(kb->decls[i]);
    return n;
}

/* Slots between a heap block's prefetch and its write. */
#define SNAPSHOT_PREFETCH 8

/* The keyed section: key group by key group, each let go of once written
 * (the task's copies on write of that key group's state stop there). */
static Checkpoint__KeyedStateHandle *
write_keyed(struct sfile *sf, const char *path, struct keyed_backend_snapshot *kb)
{
    Checkpoint__KeyedStateHandle *h = xcalloc(1, sizeof *h);
    uint32_t nkg = kb->kg_end - kb->kg_start + 1;
    uint64_t start = sf->off;

    checkpoint__keyed_state_handle__init(h);
    h->path = xstrdup(path);
    h->key_group_start = kb->kg_start;
    h->key_group_end = kb->kg_end;
    h->n_offsets = nkg;
    h->offsets = xcalloc(nkg, sizeof *h->offsets);
    for (uint32_t k = 0; k < nkg; k++) {
        h->offsets[k] = sf->off;
        sf_u32(sf, (uint32_t)count_keyed(kb));
        for (int i = 0; i < kb->nstates; i++) {
            const struct state_map_view *v = &kb->views[(size_t)i * nkg + k];

            if (!scope_keyed(kb->decls[i]))
                continue;
            sf_u32(sf, (uint32_t)v->count);
            for (size_t j = 0; v->slots != NULL && j <= v->mask; j++) {
                /* Heap blocks lie anywhere: ask for one a few slots ahead
                 * so that its miss overlaps the writes of these. */
                if (j + SNAPSHOT_PREFETCH <= v->mask) {
                    const struct state_entry *ahead = &v->slots[j + SNAPSHOT_PREFETCH];

                    if (state_entry_used(ahead) && !state_entry_inline(ahead))
                        __builtin_prefetch(ahead->u.heap);
                }
                if (state_entry_used(&v->slots[j]))
                    sf_entry(sf, &v->slots[j]);
            }
        }
        sf_u32(sf, (uint32_t)kb->timers[k].len);
        sf_put(sf, kb->timers[k].data, kb->timers[k].len);
        for (int i = 0; i < kb->nstates; i++)
            if (scope_keyed(kb->decls[i])) /* operator scope: write_operator's */
                state_map_view_release(&kb->views[(size_t)i * nkg + k]);
    }
    h->length = sf->off - start;
    return h;
}

static Checkpoint__OperatorStateEntry *
entry_new(const char *name, Checkpoint__DistributionMode mode)
{
    Checkpoint__OperatorStateEntry *e = xcalloc(1, sizeof *e);

    checkpoint__operator_state_entry__init(e);
    e->name = xstrdup(name);
    e->mode = mode;
    return e;
}

static void
entry_add_offset(Checkpoint__OperatorStateEntry *e, uint64_t off)
{
    e->offsets = xrealloc(e->offsets, (e->n_offsets + 1) * sizeof *e->offsets);
    e->offsets[e->n_offsets++] = off;
}

/* Operator state: the operator's own element, then each operator-scope
 * state's entries, one element each. */
static Checkpoint__OperatorStateHandle *
write_operator(struct sfile *sf, const char *path, const struct op_snapshot *os)
{
    Checkpoint__OperatorStateHandle *h = xcalloc(1, sizeof *h);
    uint64_t start = sf->off;
    size_t cap = 1 + (size_t)(os->has_keyed ? os->kb.nstates : 0);

    checkpoint__operator_state_handle__init(h);
    h->path = xstrdup(path);
    h->states = xcalloc(cap, sizeof *h->states);
    if (os->has_own) {
        Checkpoint__OperatorStateEntry *e =
            entry_new(OWN_STATE, os->own_union ? CHECKPOINT__DISTRIBUTION_MODE__UNION
                                               : CHECKPOINT__DISTRIBUTION_MODE__SPLIT_DISTRIBUTE);

        /* op_state_add's frames are the elements, as they are on disk. */
        for (size_t at = 0; at + 4 <= os->own.len;) {
            uint32_t n;

            memcpy(&n, os->own.data + at, 4);
            entry_add_offset(e, sf->off);
            sf_put(sf, os->own.data + at, 4 + (size_t)n);
            at += 4 + (size_t)n;
        }
        h->states[h->n_states++] = e;
    }
    for (int i = 0; os->has_keyed && i < os->kb.nstates; i++) {
        const struct state_descriptor *d = os->kb.decls[i];
        uint32_t nkg = os->kb.kg_end - os->kb.kg_start + 1;
        Checkpoint__OperatorStateEntry *e;

        if (scope_keyed(d))
            continue;
        e = entry_new(d->name, scope_mode(d->scope));
        for (uint32_t k = 0; k < nkg; k++) {
            const struct state_map_view *v = &os->kb.views[(size_t)i * nkg + k];

            for (size_t j = 0; v->slots != NULL && j <= v->mask; j++) {
                const struct state_entry *se = &v->slots[j];

                if (!state_entry_used(se))
                    continue;
                entry_add_offset(e, sf->off);
                sf_u32(sf, 16 + state_entry_key_len(se) + se->value_len);
                sf_entry(sf, se);
            }
        }
        h->states[h->n_states++] = e;
    }
    h->length = sf->off - start;
    return h;
}

static Checkpoint__StateMeta **
state_metas(const struct keyed_backend_snapshot *kb, size_t *n)
{
    Checkpoint__StateMeta **m = xcalloc((size_t)kb->nstates + 1, sizeof *m);

    *n = 0;
    for (int i = 0; i < kb->nstates; i++) {
        const struct state_descriptor *d = kb->decls[i];
        Checkpoint__StateMeta *sm;

        if (!scope_keyed(d))
            continue;
        sm = xcalloc(1, sizeof *sm);
        checkpoint__state_meta__init(sm);
        sm->name = xstrdup(d->name);
        sm->kind = d->kind;
        sm->type_name = xstrdup(d->value.name);
        sm->type_version = d->value.version;
        sm->key_type_name = xstrdup(d->key.ser != NULL ? d->key.name : "");
        sm->key_type_version = d->key.ser != NULL ? d->key.version : 0;
        m[(*n)++] = sm;
    }
    return m;
}

int
task_snapshot_write(struct task_snapshot *s, Checkpoint__AcknowledgeCheckpoint **out,
                    spate_error *err)
{
    Checkpoint__AcknowledgeCheckpoint *ack = xcalloc(1, sizeof *ack);
    struct sfile sf = { 0 };
    uint64_t t0 = clock_mono_ns();
    int rc;

    checkpoint__acknowledge_checkpoint__init(ack);
    *out = NULL;
    /* Into the folder the CheckpointCoordinator made before it triggered
     * the checkpoint, never a new one: a folder that is gone was deleted
     * with its checkpoint (aborted, the job ended), and made again here it
     * outlived the job. */
    if ((sf.fd = open(s->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        if (errno == ENOENT)
            rc = spate_error_set(err, SPATE_ENOENT,
                                 "cannot create state file '%s': its checkpoint's folder does "
                                 "not exist (the checkpoint was aborted and its folder deleted, "
                                 "or state.checkpoints.dir is not shared with the JobManager)",
                                 s->path);
        else
            rc = spate_error_set(err, -errno, "cannot create state file '%s': %s", s->path,
                                 strerror(errno));
        task_ack_free(ack);
        return rc;
    }
    sf.buf = xmalloc(SNAPSHOT_WRITE_BUFFER);
    sf_put(&sf, SNAPSHOT_MAGIC, 4);
    sf_u32(&sf, SNAPSHOT_VERSION);
    ack->operators = xcalloc((size_t)s->nops + 1, sizeof *ack->operators);
    for (int i = 0; i < s->nops; i++) {
        struct op_snapshot *os = &s->ops[i];
        Checkpoint__OperatorSubtaskState *st = xcalloc(1, sizeof *st);

        checkpoint__operator_subtask_state__init(st);
        st->operator_id.len = sizeof os->operator_id.bytes;
        st->operator_id.data = xmalloc(st->operator_id.len);
        memcpy(st->operator_id.data, os->operator_id.bytes, st->operator_id.len);
        st->subtask = os->subtask;
        if (os->has_keyed) {
            st->keyed = xcalloc(1, sizeof *st->keyed);
            st->keyed[0] = write_keyed(&sf, s->path, &os->kb);
            st->n_keyed = 1;
            st->states = state_metas(&os->kb, &st->n_states);
        }
        st->operator_ = xcalloc(1, sizeof *st->operator_);
        st->operator_[0] = write_operator(&sf, s->path, os);
        st->n_operator_ = 1;
        ack->operators[ack->n_operators++] = st;
    }
    sf_flush(&sf);
    free(sf.buf);
    if (close(sf.fd) != 0 && sf.error == 0)
        sf.error = errno ? errno : EIO;
    if (sf.error != 0) {
        rc = spate_error_set(err, -sf.error, "cannot write state file '%s': %s", s->path,
                             strerror(sf.error));
        unlink(s->path);
        task_ack_free(ack);
        return rc;
    }
    ack->checkpoint_id = s->checkpoint_id;
    ack->state_size = sf.off;
    ack->sync_duration_ms = (int64_t)(s->sync_ns / 1000000u);
    ack->async_duration_ms = (int64_t)((clock_mono_ns() - t0) / 1000000u);
    ack->alignment_duration_ms = (int64_t)(s->alignment_ns / 1000000u);
    *out = ack;
    return 0;
}

void
task_ack_free(Checkpoint__AcknowledgeCheckpoint *ack)
{
    if (ack == NULL)
        return;
    for (size_t i = 0; i < ack->n_operators; i++) {
        Checkpoint__OperatorSubtaskState *st = ack->operators[i];

        for (size_t k = 0; k < st->n_keyed; k++) {
            free(st->keyed[k]->path);
            free(st->keyed[k]->offsets);
            free(st->keyed[k]);
        }
        for (size_t k = 0; k < st->n_operator_; k++) {
            Checkpoint__OperatorStateHandle *h = st->operator_[k];

            for (size_t e = 0; e < h->n_states; e++) {
                free(h->states[e]->name);
                free(h->states[e]->offsets);
                free(h->states[e]);
            }
            free(h->states);
            free(h->path);
            free(h);
        }
        for (size_t k = 0; k < st->n_states; k++) {
            free(st->states[k]->name);
            free(st->states[k]->type_name);
            free(st->states[k]->key_type_name);
            free(st->states[k]);
        }
        free(st->keyed);
        free(st->operator_);
        free(st->states);
        free(st->operator_id.data);
        free(st);
    }
    free(ack->operators);
    free(ack);
}

/* ---- restore ---- */

/* A state file open for reading, by path (a task reads few). */
struct rfile {
    char *path;
    FILE *f;
    uint64_t size;
};

struct reader {
    struct rfile *files;
    int nfiles;
};

static int
reader_open(struct reader *r, const char *path, struct rfile **out, spate_error *err)
{
    struct stat st;
    char magic[4];
    uint32_t version;
    struct rfile *f;

    for (int i = 0; i < r->nfiles; i++) {
        if (strcmp(r->files[i].path, path) == 0) {
            *out = &r->files[i];
            return 0;
        }
    }
    r->files = xrealloc(r->files, (size_t)(r->nfiles + 1) * sizeof *r->files);
    f = &r->files[r->nfiles];
    memset(f, 0, sizeof *f);
    if ((f->f = fopen(path, "rbe")) == NULL)
        return spate_error_set(err, -errno, "cannot open state file '%s': %s", path,
                               strerror(errno));
    if (fstat(fileno(f->f), &st) != 0 || fread(magic, 1, 4, f->f) != 4 ||
        fread(&version, 1, 4, f->f) != 4 || memcmp(magic, SNAPSHOT_MAGIC, 4) != 0) {
        fclose(f->f);
        return spate_error_set(err, SPATE_EPROTO, "'%s' is not a spate state file", path);
    }
    if (version != SNAPSHOT_VERSION) {
        fclose(f->f);
        return spate_error_set(err, SPATE_EPROTO, "state file '%s' has version %u, not %u", path,
                               version, SNAPSHOT_VERSION);
    }
    f->path = xstrdup(path);
    f->size = (uint64_t)st.st_size;
    r->nfiles++;
    *out = f;
    return 0;
}

static void
reader_close(struct reader *r)
{
    for (int i = 0; i < r->nfiles; i++) {
        fclose(r->files[i].f);
        free(r->files[i].path);
    }
    free(r->files);
}

/* Reads len bytes at off into a fresh buffer. */
static int
read_at(struct rfile *f, uint64_t off, uint64_t len, uint8_t **out, spate_error *err)
{
    uint8_t *buf;

    if (off > f->size || len > f->size - off)
        return spate_error_set(err, SPATE_EPROTO,
                               "state file '%s' is truncated: %llu bytes wanted at offset %llu "
                               "of %llu",
                               f->path, (unsigned long long)len, (unsigned long long)off,
                               (unsigned long long)f->size);
    buf = xmalloc(len ? len : 1);
    if (fseeko(f->f, (off_t)off, SEEK_SET) != 0 || fread(buf, 1, len, f->f) != len) {
        free(buf);
        return spate_error_set(err, SPATE_EIO, "cannot read state file '%s' at offset %llu",
                               f->path, (unsigned long long)off);
    }
    *out = buf;
    return 0;
}

/* A cursor over bytes read from a state file. */
struct cur {
    const uint8_t *p, *end;
};

static bool
cur_u32(struct cur *c, uint32_t *v)
{
    if (c->end - c->p < 4)
        return false;
    memcpy(v, c->p, 4);
    c->p += 4;
    return true;
}

static bool
cur_entry(struct cur *c, uint64_t *hash, const uint8_t **key, uint32_t *klen, const uint8_t **value,
          uint32_t *vlen)
{
    if (c->end - c->p < 12)
        return false;
    memcpy(hash, c->p, 8);
    memcpy(klen, c->p + 8, 4);
    c->p += 12;
    if ((size_t)(c->end - c->p) < (size_t)*klen + 4)
        return false;
    *key = c->p;
    c->p += *klen;
    memcpy(vlen, c->p, 4);
    c->p += 4;
    if ((size_t)(c->end - c->p) < *vlen)
        return false;
    *value = c->p;
    c->p += *vlen;
    return true;
}

static int
corrupt(const struct rfile *f, uint64_t off, const char *what, spate_error *err)
{
    return spate_error_set(err, SPATE_EPROTO, "state file '%s' is corrupt at offset %llu: %s",
                           f->path, (unsigned long long)off, what);
}

/* Which of the backend's states each keyed state of the file is; checks
 * that the kinds and types still match. */
static int
map_states(const struct heap_keyed_backend *b, const Checkpoint__OperatorSubtaskState *st,
           const char *op_name, int *index, spate_error *err)
{
    for (size_t i = 0; i < st->n_states; i++) {
        const Checkpoint__StateMeta *m = st->states[i];
        int found = -1;

        for (int k = 0; k < b->nstates; k++)
            if (strcmp(b->states[k].base.desc.name, m->name) == 0)
                found = k;
        if (found < 0)
            return spate_error_set(err, SPATE_EINVAL,
                                   "the checkpoint has keyed state '%s' of operator '%s', which "
                                   "it no longer declares",
                                   m->name, op_name);
        {
            const struct state_descriptor *d = &b->states[found].base.desc;

            if ((int)d->kind != m->kind || strcmp(d->value.name, m->type_name) != 0 ||
                d->value.version != m->type_version)
                return spate_error_set(err, SPATE_EINVAL,
                                       "state '%s' of operator '%s' was written as %s version "
                                       "%d and is now %s version %d",
                                       m->name, op_name, m->type_name, m->type_version,
                                       d->value.name, d->value.version);
        }
        index[i] = found;
    }
    return 0;
}

static int
restore_key_group(struct heap_keyed_backend *b, struct rfile *f, uint64_t off, uint64_t len,
                  const int *index, size_t nmeta, spate_error *err)
{
    uint8_t *buf;
    struct cur c;
    uint32_t nstates, tlen;
    int rc;

    if ((rc = read_at(f, off, len, &buf, err)) != 0)
        return rc;
    c = (struct cur){ buf, buf + len };
    if (!cur_u32(&c, &nstates) || nstates != nmeta) {
        rc = corrupt(f, off, "a key group with the wrong number of states", err);
        goto out;
    }
    for (uint32_t s = 0; s < nstates; s++) {
        uint32_t count;

        if (!cur_u32(&c, &count)) {
            rc = corrupt(f, off, "a truncated key group", err);
            goto out;
        }
        for (uint32_t e = 0; e < count; e++) {
            const uint8_t *key, *value;
            uint32_t klen, vlen;
            uint64_t hash;

            if (!cur_entry(&c, &hash, &key, &klen, &value, &vlen)) {
                rc = corrupt(f, off, "a truncated state entry", err);
                goto out;
            }
            keyed_backend_restore_entry(b, index[s], hash, key, klen, value, vlen);
        }
    }
    if (!cur_u32(&c, &tlen) || (size_t)(c.end - c.p) != tlen ||
        keyed_backend_restore_timers(b, c.p, tlen) != 0)
        rc = corrupt(f, off, "malformed timers", err);
out:
    free(buf);
    return rc;
}

static int
restore_keyed(struct stream_operator *op, const Checkpoint__OperatorSubtaskState *st,
              const char *op_name, struct reader *r, spate_error *err)
{
    struct heap_keyed_backend *b = op->backend != NULL ? heap_keyed_backend_of(op->backend) : NULL;
    int *index = xcalloc(st->n_states + 1, sizeof *index);
    int rc = 0;

    if (b == NULL) {
        free(index);
        return st->n_keyed == 0 ? 0
                                : spate_error_set(err, SPATE_EINVAL,
                                                  "the checkpoint has keyed state for operator "
                                                  "'%s', which keeps none",
                                                  op_name);
    }
    if ((rc = map_states(b, st, op_name, index, err)) != 0)
        goto out;
    for (size_t h = 0; h < st->n_keyed; h++) {
        const Checkpoint__KeyedStateHandle *kh = st->keyed[h];
        uint32_t lo = MAX(kh->key_group_start, b->timer_sets.range.start);
        uint32_t hi = MIN(kh->key_group_end, b->timer_sets.range.end);
        uint64_t section_end;
        struct rfile *f;

        if (kh->key_group_end < kh->key_group_start ||
            kh->n_offsets != (size_t)(kh->key_group_end - kh->key_group_start) + 1) {
            rc = spate_error_set(err, SPATE_EPROTO, "malformed key group offsets for '%s'",
                                 kh->path);
            goto out;
        }
        if ((rc = reader_open(r, kh->path, &f, err)) != 0)
            goto out;
        section_end = kh->offsets[0] + kh->length;
        for (uint32_t kg = lo; kg <= hi && lo <= hi; kg++) {
            uint32_t k = kg - kh->key_group_start;
            uint64_t next = k + 1 < kh->n_offsets ? kh->offsets[k + 1] : section_end;

            if (next < kh->offsets[k]) {
                rc = corrupt(f, kh->offsets[k], "key group offsets out of order", err);
                goto out;
            }
            if ((rc = restore_key_group(b, f, kh->offsets[k], next - kh->offsets[k], index,
                                        st->n_states, err)) != 0)
                goto out;
        }
    }
out:
    free(index);
    return rc;
}

static int
restore_operator(struct stream_operator *op, const Checkpoint__OperatorSubtaskState *st,
                 const char *op_name, struct reader *r, spate_error *err)
{
    for (size_t h = 0; h < st->n_operator_; h++) {
        const Checkpoint__OperatorStateHandle *oh = st->operator_[h];
        struct rfile *f;
        int rc;

        if (oh->n_states == 0)
            continue;
        if ((rc = reader_open(r, oh->path, &f, err)) != 0)
            return rc;
        for (size_t s = 0; s < oh->n_states; s++) {
            const Checkpoint__OperatorStateEntry *e = oh->states[s];
            bool own = strcmp(e->name, OWN_STATE) == 0;
            struct heap_keyed_backend *b =
                op->backend != NULL ? heap_keyed_backend_of(op->backend) : NULL;
            struct heap_state *target = NULL;

            if (!own && (b == NULL || (target = keyed_backend_state(b, e->name)) == NULL))
                return spate_error_set(err, SPATE_EINVAL,
                                       "the checkpoint has operator state '%s' of operator '%s', "
                                       "which it no longer declares",
                                       e->name, op_name);
            if (own && op->vt->restore_state == NULL)
                return spate_error_set(err, SPATE_EINVAL,
                                       "the checkpoint has state of operator '%s', which keeps "
                                       "none",
                                       op_name);
            for (size_t k = 0; k < e->n_offsets; k++) {
                uint8_t *hdr, *buf;
                uint32_t len;

                if ((rc = read_at(f, e->offsets[k], 4, &hdr, err)) != 0)
                    return rc;
                memcpy(&len, hdr, 4);
                free(hdr);
                if ((rc = read_at(f, e->offsets[k] + 4, len, &buf, err)) != 0)
                    return rc;
                if (own) {
                    rc = op->vt->restore_state(op, buf, len, err);
                    if (rc != 0)
                        spate_error_wrap(err, "state file '%s'", f->path);
                } else {
                    struct cur c = { buf, buf + len };
                    const uint8_t *key, *value;
                    uint32_t klen, vlen;
                    uint64_t hash;

                    if (!cur_entry(&c, &hash, &key, &klen, &value, &vlen) || c.p != c.end)
                        rc = corrupt(f, e->offsets[k], "a malformed operator state element", err);
                    else
                        keyed_backend_restore_entry(b, (int)(target - b->states), hash, key, klen,
                                                    value, vlen);
                }
                free(buf);
                if (rc != 0)
                    return rc;
            }
        }
    }
    return 0;
}

int
task_restore(const struct operator_chain *chain, const struct jg_vertex *v,
             const Checkpoint__TaskRestore *r, spate_error *err)
{
    struct reader rd = { 0 };
    int rc = 0;

    for (size_t i = 0; i < r->n_operators && rc == 0; i++) {
        const Checkpoint__OperatorSubtaskState *st = r->operators[i];
        int found = -1;

        for (int k = 0; k < v->nops; k++)
            if (st->operator_id.len == sizeof v->ops[k].operator_id.bytes &&
                memcmp(st->operator_id.data, v->ops[k].operator_id.bytes, st->operator_id.len) == 0)
                found = k;
        if (found < 0) {
            rc = spate_error_set(err, SPATE_EINVAL,
                                 "the state to restore names an operator that task '%s' does "
                                 "not run",
                                 v->name);
            break;
        }
        chain->ops[found]->restored = true;
        if ((rc = restore_keyed(chain->ops[found], st, v->ops[found].name, &rd, err)) == 0)
            rc = restore_operator(chain->ops[found], st, v->ops[found].name, &rd, err);
    }
    reader_close(&rd);
    return rc;
}
