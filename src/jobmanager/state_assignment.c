/* State assignment (state_assignment.h). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/key_group.h"
#include "core/log.h"
#include "core/util.h"
#include "jobmanager/state_assignment.h"

#define SA_LOG "jobmaster"

typedef Checkpoint__OperatorState OpState;
typedef Checkpoint__OperatorSubtaskState SubState;
typedef Checkpoint__KeyedStateHandle KeyedHandle;
typedef Checkpoint__OperatorStateHandle OpHandle;
typedef Checkpoint__OperatorStateEntry OpEntry;

bool
state_assignment_has_state(const OpState *op)
{
    if (op->source_coordinator != NULL)
        return true;
    for (size_t s = 0; s < op->n_subtasks; s++)
        if (op->subtasks[s]->n_keyed > 0 || op->subtasks[s]->n_operator_ > 0)
            return true;
    return false;
}

static bool
has_keyed_state(const OpState *op)
{
    for (size_t s = 0; s < op->n_subtasks; s++)
        if (op->subtasks[s]->n_keyed > 0)
            return true;
    return false;
}

static const OpState *
find_state(const Checkpoint__CheckpointMetadata *md, const spate_id *id)
{
    for (size_t o = 0; o < md->n_operators; o++)
        if (md->operators[o]->operator_id.len == ID_BYTES &&
            memcmp(md->operators[o]->operator_id.data, id->bytes, ID_BYTES) == 0)
            return md->operators[o];
    return NULL;
}

/* The vertex and operator of jg with operator id `id`; false when none. */
static bool
find_operator(const struct job_graph *jg, const uint8_t *id, int *vertex, int *op)
{
    for (int v = 0; v < jg->nvertices; v++)
        for (int o = 0; o < jg->vertices[v].nops; o++)
            if (memcmp(jg->vertices[v].ops[o].operator_id.bytes, id, ID_BYTES) == 0) {
                *vertex = v;
                *op = o;
                return true;
            }
    return false;
}

int
state_assignment_check(const Checkpoint__CheckpointMetadata *md, const struct job_graph *jg,
                       bool allow_non_restored, const char *where, spate_error *err)
{
    for (size_t o = 0; o < md->n_operators; o++) {
        const OpState *st = md->operators[o];
        spate_id id;
        int v, op;

        if (!state_assignment_has_state(st))
            continue;
        memcpy(id.bytes, st->operator_id.data, ID_BYTES);
        if (!find_operator(jg, st->operator_id.data, &v, &op)) {
            if (allow_non_restored) {
                SPATE_LOG_INFO(SA_LOG,
                               "skipping the state of operator '%s' (uid '%s', id %s) of '%s': "
                               "the job has no such operator",
                               st->name, st->uid, id_str(&id).s, where);
                continue;
            }
            return spate_error_set(err, SPATE_ESTATE,
                                   "'%s' has state of operator '%s' (uid '%s', id %s), which the "
                                   "job does not have; allow non-restored state to skip it",
                                   where, st->name, st->uid, id_str(&id).s);
        }
        if (has_keyed_state(st) && st->max_parallelism != jg->vertices[v].max_parallelism)
            return spate_error_set(err, SPATE_ESTATE,
                                   "'%s' has keyed state of operator '%s' (uid '%s') taken at max "
                                   "parallelism %d; the job's is %d, and key groups cannot be "
                                   "redistributed to another max parallelism",
                                   where, st->name, st->uid, st->max_parallelism,
                                   jg->vertices[v].max_parallelism);
    }
    return 0;
}

/* A deep copy of a message (protobuf-c's default allocator). */
static void *
copy_message(const ProtobufCMessage *m)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = xmalloc(len ? len : 1);
    ProtobufCMessage *copy;

    protobuf_c_message_pack(m, buf);
    copy = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
    free(buf);
    SPATE_ASSERT(copy != NULL);
    return copy;
}

/* ---- keyed state ------------------------------------------------------------------- */

/* h cut to key groups [lo, hi] (within h's range). */
static KeyedHandle *
keyed_cut(const KeyedHandle *h, uint32_t lo, uint32_t hi)
{
    KeyedHandle *c;
    uint64_t end;

    if (lo == h->key_group_start && hi == h->key_group_end)
        return copy_message(&h->base);
    c = xmalloc(sizeof *c);
    checkpoint__keyed_state_handle__init(c);
    c->path = xstrdup(h->path);
    c->key_group_start = lo;
    c->key_group_end = hi;
    c->n_offsets = hi - lo + 1;
    c->offsets = xcalloc(c->n_offsets, sizeof *c->offsets);
    memcpy(c->offsets, h->offsets + (lo - h->key_group_start), c->n_offsets * sizeof *c->offsets);
    end =
        hi < h->key_group_end ? h->offsets[hi - h->key_group_start + 1] : h->offsets[0] + h->length;
    c->length = end - c->offsets[0];
    /* An incremental RocksDB checkpoint's database: the whole of it, the
     * backend clips it to its key groups. */
    if (h->n_files > 0) {
        c->n_files = h->n_files;
        c->files = xcalloc(h->n_files, sizeof *c->files);
        for (size_t i = 0; i < h->n_files; i++)
            c->files[i] = copy_message(&h->files[i]->base);
    }
    return c;
}

static void
assign_keyed(const OpState *st, struct key_group_range range, SubState *out)
{
    for (size_t s = 0; s < st->n_subtasks; s++) {
        const SubState *old = st->subtasks[s];

        for (size_t k = 0; k < old->n_keyed; k++) {
            const KeyedHandle *h = old->keyed[k];
            uint32_t lo = MAX(h->key_group_start, range.start);
            uint32_t hi = MIN(h->key_group_end, range.end);

            if (lo > hi || range.end < range.start)
                continue;
            out->keyed = xrealloc(out->keyed, (out->n_keyed + 1) * sizeof *out->keyed);
            out->keyed[out->n_keyed++] = keyed_cut(h, lo, hi);
        }
    }
}

/* ---- operator state ---------------------------------------------------------------- */

/* The handle of out for a file (made on first use). */
static OpHandle *
out_handle(SubState *out, const OpHandle *from)
{
    OpHandle *h;

    for (size_t i = 0; i < out->n_operator_; i++)
        if (strcmp(out->operator_[i]->path, from->path) == 0)
            return out->operator_[i];
    h = xmalloc(sizeof *h);
    checkpoint__operator_state_handle__init(h);
    h->path = xstrdup(from->path);
    h->length = from->length;
    out->operator_ = xrealloc(out->operator_, (out->n_operator_ + 1) * sizeof *out->operator_);
    out->operator_[out->n_operator_++] = h;
    return h;
}

/* The entry of a handle for a state (made on first use). */
static OpEntry *
out_entry(OpHandle *h, const OpEntry *from)
{
    OpEntry *e;

    for (size_t i = 0; i < h->n_states; i++)
        if (strcmp(h->states[i]->name, from->name) == 0)
            return h->states[i];
    e = xmalloc(sizeof *e);
    checkpoint__operator_state_entry__init(e);
    e->name = xstrdup(from->name);
    e->mode = from->mode;
    h->states = xrealloc(h->states, (h->n_states + 1) * sizeof *h->states);
    h->states[h->n_states++] = e;
    return e;
}

static void
entry_add(OpEntry *e, uint64_t offset)
{
    e->offsets = xrealloc(e->offsets, (e->n_offsets + 1) * sizeof *e->offsets);
    e->offsets[e->n_offsets++] = offset;
}

/* Every element of the state entries of one mode, in old subtask order;
 * `only` limits it to one old subtask (-1: all). */
static void
add_entries(const OpState *st, Checkpoint__DistributionMode mode, int only, SubState *out)
{
    for (size_t s = 0; s < st->n_subtasks; s++) {
        const SubState *old = st->subtasks[s];

        if (only >= 0 && old->subtask != only)
            continue;
        for (size_t k = 0; k < old->n_operator_; k++) {
            const OpHandle *h = old->operator_[k];

            for (size_t e = 0; e < h->n_states; e++) {
                OpEntry *to;

                if (h->states[e]->mode != mode)
                    continue;
                to = out_entry(out_handle(out, h), h->states[e]);
                for (size_t i = 0; i < h->states[e]->n_offsets; i++)
                    entry_add(to, h->states[e]->offsets[i]);
            }
        }
    }
}

/* SPLIT_DISTRIBUTE at another parallelism: per state name, the elements of
 * every old subtask in order, cut into `parallelism` runs whose sizes differ
 * by at most one (the first ones get the remainder). */
static void
split_entries(const OpState *st, int parallelism, int subtask, SubState *out)
{
    const char **names = NULL;
    size_t nnames = 0;

    for (size_t s = 0; s < st->n_subtasks; s++)
        for (size_t k = 0; k < st->subtasks[s]->n_operator_; k++) {
            const OpHandle *h = st->subtasks[s]->operator_[k];

            for (size_t e = 0; e < h->n_states; e++) {
                size_t i;

                if (h->states[e]->mode != CHECKPOINT__DISTRIBUTION_MODE__SPLIT_DISTRIBUTE)
                    continue;
                for (i = 0; i < nnames && strcmp(names[i], h->states[e]->name) != 0; i++)
                    ;
                if (i == nnames) {
                    names = xrealloc(names, (nnames + 1) * sizeof *names);
                    names[nnames++] = h->states[e]->name;
                }
            }
        }
    for (size_t n = 0; n < nnames; n++) {
        uint64_t total = 0, first = 0, count = 0, index = 0;

        for (int pass = 0; pass < 2; pass++) {
            for (size_t s = 0; s < st->n_subtasks; s++)
                for (size_t k = 0; k < st->subtasks[s]->n_operator_; k++) {
                    const OpHandle *h = st->subtasks[s]->operator_[k];

                    for (size_t e = 0; e < h->n_states; e++) {
                        const OpEntry *en = h->states[e];

                        if (en->mode != CHECKPOINT__DISTRIBUTION_MODE__SPLIT_DISTRIBUTE ||
                            strcmp(en->name, names[n]) != 0)
                            continue;
                        if (pass == 0) {
                            total += en->n_offsets;
                            continue;
                        }
                        for (size_t i = 0; i < en->n_offsets; i++, index++)
                            if (index >= first && index < first + count)
                                entry_add(out_entry(out_handle(out, h), en), en->offsets[i]);
                    }
                }
            if (pass == 0) {
                uint64_t base = total / (uint64_t)parallelism;
                uint64_t rem = total % (uint64_t)parallelism;
                uint64_t sub = (uint64_t)subtask;

                first = sub * base + MIN(sub, rem);
                count = base + (sub < rem ? 1 : 0);
            }
        }
    }
    free(names);
}

static void
assign_operator_state(const OpState *st, int parallelism, int subtask, SubState *out)
{
    if (st->parallelism == parallelism) {
        add_entries(st, CHECKPOINT__DISTRIBUTION_MODE__SPLIT_DISTRIBUTE, subtask, out);
        add_entries(st, CHECKPOINT__DISTRIBUTION_MODE__BROADCAST, subtask, out);
    } else {
        split_entries(st, parallelism, subtask, out);
        add_entries(st, CHECKPOINT__DISTRIBUTION_MODE__BROADCAST, subtask % st->parallelism, out);
    }
    add_entries(st, CHECKPOINT__DISTRIBUTION_MODE__UNION, -1, out);
}

/* The registered states (names, serializers) of every old subtask, once
 * per name. */
static void
assign_state_metas(const OpState *st, SubState *out)
{
    for (size_t s = 0; s < st->n_subtasks; s++)
        for (size_t m = 0; m < st->subtasks[s]->n_states; m++) {
            const Checkpoint__StateMeta *meta = st->subtasks[s]->states[m];
            size_t i;

            for (i = 0; i < out->n_states && strcmp(out->states[i]->name, meta->name) != 0; i++)
                ;
            if (i < out->n_states)
                continue;
            out->states = xrealloc(out->states, (out->n_states + 1) * sizeof *out->states);
            out->states[out->n_states++] = copy_message(&meta->base);
        }
}

/* Whether the checkpoint recorded subtask `subtask` of st as finished. */
static bool
subtask_finished(const OpState *st, int subtask)
{
    for (size_t s = 0; s < st->n_subtasks; s++)
        if (st->subtasks[s]->subtask == subtask && st->subtasks[s]->finished)
            return true;
    return false;
}

/* Every subtask of st had finished (Flink's fully finished operator). */
static bool
fully_finished(const OpState *st)
{
    for (int s = 0; s < st->parallelism; s++)
        if (!subtask_finished(st, s))
            return false;
    return st->parallelism > 0;
}

bool
state_assignment_finished(const Checkpoint__CheckpointMetadata *md, const struct job_graph *jg,
                          int vertex, int subtask)
{
    const struct jg_vertex *v = &jg->vertices[vertex];

    /* At its parallelism a finished subtask is restored finished; at
     * another only a fully finished operator is, and the state of a
     * partly finished one goes to subtasks that all run. */
    for (int o = 0; o < v->nops; o++) {
        const OpState *st = find_state(md, &v->ops[o].operator_id);

        if (st == NULL || !(fully_finished(st) ||
                            (st->parallelism == v->parallelism && subtask_finished(st, subtask))))
            return false;
    }
    return v->nops > 0;
}

Checkpoint__TaskRestore *
state_assignment_subtask(const Checkpoint__CheckpointMetadata *md, const struct job_graph *jg,
                         int vertex, int subtask)
{
    const struct jg_vertex *v = &jg->vertices[vertex];
    Checkpoint__TaskRestore *r = xmalloc(sizeof *r);

    checkpoint__task_restore__init(r);
    r->checkpoint_id = md->checkpoint_id;
    r->operators = xcalloc((size_t)v->nops, sizeof *r->operators);
    if ((r->finished = state_assignment_finished(md, jg, vertex, subtask)))
        return r; /* no state: it emits nothing and ends */
    for (int o = 0; o < v->nops; o++) {
        const OpState *st = find_state(md, &v->ops[o].operator_id);
        SubState *out;

        if (st == NULL || (st->n_subtasks == 0 && st->source_coordinator == NULL))
            continue;
        out = xmalloc(sizeof *out);
        checkpoint__operator_subtask_state__init(out);
        out->operator_id.len = ID_BYTES;
        out->operator_id.data = xmalloc(ID_BYTES);
        memcpy(out->operator_id.data, v->ops[o].operator_id.bytes, ID_BYTES);
        out->subtask = subtask;
        assign_keyed(st,
                     key_group_range_for_operator((uint32_t)v->max_parallelism,
                                                  (uint32_t)v->parallelism, (uint32_t)subtask),
                     out);
        assign_operator_state(st, v->parallelism, subtask, out);
        assign_state_metas(st, out);
        r->operators[r->n_operators++] = out;
    }
    return r;
}
