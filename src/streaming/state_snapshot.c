/* Checkpoints of a task's operator chain (state_snapshot.h). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/util.h"
#include "state/state_file.h"
#include "streaming/state_snapshot.h"
/* The name of the element an operator keeps itself (operator.h's
 * snapshot_state) among its operator state. */
#define OWN_STATE "__operator"

struct op_snapshot {
    spate_id operator_id;
    int subtask;
    const struct keyed_state_backend_ops *backend; /* NULL: no keyed backend */
    struct keyed_state_snapshot *kb;
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
                   int64_t checkpoint_id, int64_t timestamp, const char *shared_dir,
                   const char *path, spate_error *err)
{
    const struct keyed_snapshot_request req[1] = { { checkpoint_id, shared_dir } };
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
            os->backend = op->backend->ops;
            os->kb = op->backend->ops->snapshot(op->backend, req);
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
        if (s->ops[i].backend != NULL)
            s->ops[i].backend->snapshot_release(s->ops[i].kb);
        free(s->ops[i].own.data);
    }
    free(s->ops);
    free(s->path);
    free(s);
}

/* ---- the asynchronous part ---- */

/* Operator state: the operator's own element, then each operator-scope
 * state's entries (the backend's), one element each. */
static Checkpoint__OperatorStateHandle *
write_operator(struct state_file_writer *w, const char *path, const struct op_snapshot *os)
{
    Checkpoint__OperatorStateHandle *h = xcalloc(1, sizeof *h);
    uint64_t start = w->off;

    checkpoint__operator_state_handle__init(h);
    h->path = xstrdup(path);
    h->states = xcalloc(1, sizeof *h->states);
    if (os->has_own) {
        Checkpoint__OperatorStateEntry *e = state_file_operator_entry(
            OWN_STATE, os->own_union ? CHECKPOINT__DISTRIBUTION_MODE__UNION
                                     : CHECKPOINT__DISTRIBUTION_MODE__SPLIT_DISTRIBUTE);

        /* op_state_add's frames are the elements, as they are on disk. */
        for (size_t at = 0; at + 4 <= os->own.len;) {
            uint32_t n;

            memcpy(&n, os->own.data + at, 4);
            state_file_add_offset(e, w->off);
            state_file_put(w, os->own.data + at, 4 + (size_t)n);
            at += 4 + (size_t)n;
        }
        h->states[h->n_states++] = e;
    }
    if (os->backend != NULL)
        os->backend->snapshot_write_operator(os->kb, w, h);
    h->length = w->off - start;
    return h;
}

int
task_snapshot_write(struct task_snapshot *s, Checkpoint__AcknowledgeCheckpoint **out,
                    spate_error *err)
{
    Checkpoint__AcknowledgeCheckpoint *ack;
    struct state_file_writer w;
    uint64_t t0 = clock_mono_ns();
    int rc;

    *out = NULL;
    if ((rc = state_file_create(&w, s->path, err)) != 0)
        return rc;
    ack = xcalloc(1, sizeof *ack);
    checkpoint__acknowledge_checkpoint__init(ack);
    ack->operators = xcalloc((size_t)s->nops + 1, sizeof *ack->operators);
    for (int i = 0; i < s->nops; i++) {
        struct op_snapshot *os = &s->ops[i];
        Checkpoint__OperatorSubtaskState *st = xcalloc(1, sizeof *st);

        checkpoint__operator_subtask_state__init(st);
        st->operator_id.len = sizeof os->operator_id.bytes;
        st->operator_id.data = xmalloc(st->operator_id.len);
        memcpy(st->operator_id.data, os->operator_id.bytes, st->operator_id.len);
        st->subtask = os->subtask;
        if (os->backend != NULL) {
            st->keyed = xcalloc(1, sizeof *st->keyed);
            st->keyed[0] = os->backend->snapshot_write(os->kb, &w, s->path);
            st->n_keyed = 1;
            st->states = os->backend->snapshot_metas(os->kb, &st->n_states);
        }
        st->operator_ = xcalloc(1, sizeof *st->operator_);
        st->operator_[0] = write_operator(&w, s->path, os);
        st->n_operator_ = 1;
        ack->operators[ack->n_operators++] = st;
    }
    if ((rc = state_file_finish(&w, s->path, err)) != 0) {
        task_ack_free(ack);
        return rc;
    }
    ack->checkpoint_id = s->checkpoint_id;
    ack->state_size = w.off;
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
            for (size_t f = 0; f < st->keyed[k]->n_files; f++) {
                free(st->keyed[k]->files[f]->name);
                free(st->keyed[k]->files[f]->path);
                free(st->keyed[k]->files[f]);
            }
            free(st->keyed[k]->files);
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

static int
restore_keyed(struct stream_operator *op, const Checkpoint__OperatorSubtaskState *st,
              const char *op_name, struct state_file_reader *r, spate_error *err)
{
    if (op->backend == NULL)
        return st->n_keyed == 0 ? 0
                                : spate_error_set(err, SPATE_EINVAL,
                                                  "the checkpoint has keyed state for operator "
                                                  "'%s', which keeps none",
                                                  op_name);
    return op->backend->ops->restore(op->backend, st, op_name, r, err);
}

static int
restore_operator(struct stream_operator *op, const Checkpoint__OperatorSubtaskState *st,
                 const char *op_name, struct state_file_reader *r, spate_error *err)
{
    for (size_t h = 0; h < st->n_operator_; h++) {
        const Checkpoint__OperatorStateHandle *oh = st->operator_[h];
        struct state_file *f;
        int rc;

        if (oh->n_states == 0)
            continue;
        if ((rc = state_file_open(r, oh->path, &f, err)) != 0)
            return rc;
        for (size_t s = 0; s < oh->n_states; s++) {
            const Checkpoint__OperatorStateEntry *e = oh->states[s];
            bool own = strcmp(e->name, OWN_STATE) == 0;
            struct spate_state *target = NULL;

            if (!own && (op->backend == NULL ||
                         (target = op->backend->ops->state(op->backend, e->name)) == NULL))
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

                if ((rc = state_file_read(f, e->offsets[k], 4, &hdr, err)) != 0)
                    return rc;
                memcpy(&len, hdr, 4);
                free(hdr);
                if ((rc = state_file_read(f, e->offsets[k] + 4, len, &buf, err)) != 0)
                    return rc;
                if (own) {
                    rc = op->vt->restore_state(op, buf, len, err);
                    if (rc != 0)
                        spate_error_wrap(err, "state file '%s'", f->path);
                } else if (!op->backend->ops->restore_element(target, buf, len)) {
                    rc = state_file_corrupt(f, e->offsets[k], "a malformed operator state element",
                                            err);
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
    struct state_file_reader rd = { 0 };
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
    state_file_reader_release(&rd);
    return rc;
}
