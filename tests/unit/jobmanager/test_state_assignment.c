/* Unit tests of src/jobmanager/state_assignment.c: keyed handles by key
 * group range at the same, a higher and a lower parallelism (cut handles
 * keep their offsets and lengths), operator list state split evenly,
 * unioned and broadcast, subtasks recorded finished restored finished
 * (FLIP-147), and the checks before a restore (unknown operators, another
 * max parallelism). */
#include <criterion/criterion.h>
#include <string.h>

#include "jobmanager/state_assignment.h"
#include "streaming/types.h"

/* source (p2) -> key by -> sum (p sum_p, max parallelism 8): vertex 1. */
static struct job_graph *
make_graph(int sum_p)
{
    spate_env *env = env_new(NULL, NULL);
    int64_t values[] = { 1, 2, 3 };
    struct job_graph *jg;
    spate_error err = { 0 };
    spate_stream *s;

    spate_env_set_max_parallelism(env, 8);
    s = spate_set_parallelism(spate_source_collection(env, spate_type_int64(), values, 3), 2);
    s = spate_set_parallelism(spate_sum(spate_key_by_value(s), -1), sum_p);
    spate_sink_print(s);
    cr_assert_eq(job_graph_build(env, "t", &jg, &err), 0, "%s", err.message);
    cr_assert_eq(jg->vertices[1].max_parallelism, 8);
    cr_assert_eq(jg->vertices[1].parallelism, sum_p);
    /* The tests use only the graph's ids and parallelism, not env's nodes. */
    env_free(env);
    return jg;
}

/* Metadata of the sum at parallelism 2 (max 8): subtask 0 holds key groups
 * 0-3 in "k0" at offsets 0,10,20,30 (40 bytes), subtask 1 key groups 4-7
 * in "k1" at 100,110,120,130 (45 bytes); list state "l" with 3 elements
 * in "o0" and 2 in "o1"; union state "u" and broadcast state "b" in both. */
struct meta {
    Checkpoint__CheckpointMetadata md;
    Checkpoint__OperatorState op, *ops[1];
    Checkpoint__OperatorSubtaskState st[2], *sts[2];
    Checkpoint__KeyedStateHandle kh[2], *khs[2][1];
    Checkpoint__OperatorStateHandle oh[2], *ohs[2][1];
    Checkpoint__OperatorStateEntry en[2][3], *ens[2][3];
    Checkpoint__StateMeta sm, *sms[1];
    uint64_t koffs[2][4], loffs[2][3], uoffs[2][1], boffs[2][1];
    uint8_t job[16];
};

static void
meta_init(struct meta *m, const struct job_graph *jg)
{
    static const char *kpath[] = { "/c/k0", "/c/k1" }, *opath[] = { "/c/o0", "/c/o1" };

    memset(m, 0, sizeof *m);
    checkpoint__checkpoint_metadata__init(&m->md);
    m->md.checkpoint_id = 9;
    m->md.job_id.data = m->job;
    m->md.job_id.len = 16;
    checkpoint__operator_state__init(&m->op);
    m->op.operator_id.data = (uint8_t *)jg->vertices[1].ops[0].operator_id.bytes;
    m->op.operator_id.len = 16;
    m->op.name = "Sum";
    m->op.uid = "";
    m->op.parallelism = 2;
    m->op.max_parallelism = 8;
    checkpoint__state_meta__init(&m->sm);
    m->sm.name = "sum";
    m->sm.type_name = "int64";
    m->sms[0] = &m->sm;
    for (int s = 0; s < 2; s++) {
        checkpoint__operator_subtask_state__init(&m->st[s]);
        m->st[s].subtask = s;
        checkpoint__keyed_state_handle__init(&m->kh[s]);
        m->kh[s].path = (char *)kpath[s];
        m->kh[s].key_group_start = (uint32_t)(4 * s);
        m->kh[s].key_group_end = (uint32_t)(4 * s + 3);
        for (int k = 0; k < 4; k++)
            m->koffs[s][k] = (uint64_t)(100 * s + 10 * k);
        m->kh[s].offsets = m->koffs[s];
        m->kh[s].n_offsets = 4;
        m->kh[s].length = s == 0 ? 40 : 45;
        m->khs[s][0] = &m->kh[s];
        m->st[s].keyed = m->khs[s];
        m->st[s].n_keyed = 1;
        for (int e = 0; e < 3; e++) {
            checkpoint__operator_state_entry__init(&m->en[s][e]);
            m->ens[s][e] = &m->en[s][e];
        }
        m->en[s][0].name = "l";
        m->en[s][0].mode = CHECKPOINT__DISTRIBUTION_MODE__SPLIT_DISTRIBUTE;
        for (int i = 0; i < 3; i++)
            m->loffs[s][i] = (uint64_t)(1000 * (s + 1) + i);
        m->en[s][0].offsets = m->loffs[s];
        m->en[s][0].n_offsets = s == 0 ? 3 : 2;
        m->en[s][1].name = "u";
        m->en[s][1].mode = CHECKPOINT__DISTRIBUTION_MODE__UNION;
        m->uoffs[s][0] = (uint64_t)(5000 + s);
        m->en[s][1].offsets = m->uoffs[s];
        m->en[s][1].n_offsets = 1;
        m->en[s][2].name = "b";
        m->en[s][2].mode = CHECKPOINT__DISTRIBUTION_MODE__BROADCAST;
        m->boffs[s][0] = (uint64_t)(7000 + s);
        m->en[s][2].offsets = m->boffs[s];
        m->en[s][2].n_offsets = 1;
        checkpoint__operator_state_handle__init(&m->oh[s]);
        m->oh[s].path = (char *)opath[s];
        m->oh[s].states = m->ens[s];
        m->oh[s].n_states = 3;
        m->oh[s].length = 8000;
        m->ohs[s][0] = &m->oh[s];
        m->st[s].operator_ = m->ohs[s];
        m->st[s].n_operator_ = 1;
        m->st[s].states = m->sms;
        m->st[s].n_states = 1;
        m->sts[s] = &m->st[s];
    }
    m->op.subtasks = m->sts;
    m->op.n_subtasks = 2;
    m->ops[0] = &m->op;
    m->md.operators = m->ops;
    m->md.n_operators = 1;
}

static const Checkpoint__OperatorSubtaskState *
sum_state(const Checkpoint__TaskRestore *r)
{
    cr_assert_eq(r->checkpoint_id, 9);
    cr_assert_eq(r->n_operators, 1);
    return r->operators[0];
}

static const Checkpoint__OperatorStateEntry *
entry(const Checkpoint__OperatorSubtaskState *s, const char *path, const char *name)
{
    for (size_t h = 0; h < s->n_operator_; h++)
        if (strcmp(s->operator_[h]->path, path) == 0)
            for (size_t e = 0; e < s->operator_[h]->n_states; e++)
                if (strcmp(s->operator_[h]->states[e]->name, name) == 0)
                    return s->operator_[h]->states[e];
    return NULL;
}

static size_t
elements(const Checkpoint__OperatorSubtaskState *s, const char *name)
{
    size_t n = 0;

    for (size_t h = 0; h < s->n_operator_; h++)
        for (size_t e = 0; e < s->operator_[h]->n_states; e++)
            if (strcmp(s->operator_[h]->states[e]->name, name) == 0)
                n += s->operator_[h]->states[e]->n_offsets;
    return n;
}

Test(state_assignment, the_same_parallelism_keeps_each_subtasks_own_state)
{
    struct job_graph *jg = make_graph(2);
    struct meta m;

    meta_init(&m, jg);
    for (int s = 0; s < 2; s++) {
        Checkpoint__TaskRestore *r = state_assignment_subtask(&m.md, jg, 1, s);
        const Checkpoint__OperatorSubtaskState *st = sum_state(r);

        cr_assert_eq(st->subtask, s);
        cr_assert_eq(st->n_keyed, 1);
        cr_assert_str_eq(st->keyed[0]->path, s == 0 ? "/c/k0" : "/c/k1");
        cr_assert_eq(st->keyed[0]->length, s == 0 ? 40 : 45);
        cr_assert_eq(elements(st, "l"), s == 0 ? 3 : 2);
        cr_assert_eq(elements(st, "u"), 2, "union state goes to every subtask");
        cr_assert_eq(entry(st, s == 0 ? "/c/o0" : "/c/o1", "b")->offsets[0], 7000 + (uint64_t)s);
        cr_assert_eq(st->n_states, 1);
        cr_assert_str_eq(st->states[0]->type_name, "int64");
        checkpoint__task_restore__free_unpacked(r, NULL);
    }
    /* The source has no state: its subtasks restore nothing, but know the
     * checkpoint. */
    Checkpoint__TaskRestore *r = state_assignment_subtask(&m.md, jg, 0, 1);
    cr_assert_eq(r->checkpoint_id, 9);
    cr_assert_eq(r->n_operators, 0);
    checkpoint__task_restore__free_unpacked(r, NULL);
    job_graph_free(jg);
}

Test(state_assignment, scaling_up_cuts_keyed_handles_to_each_key_group_range)
{
    struct job_graph *jg = make_graph(4);
    /* p4 of 8 key groups: 0-1, 2-3, 4-5, 6-7. */
    static const struct {
        const char *path;
        uint32_t start, end;
        uint64_t first, second, length;
    } want[] = {
        { "/c/k0", 0, 1, 0, 10, 20 },
        { "/c/k0", 2, 3, 20, 30, 20 },
        { "/c/k1", 4, 5, 100, 110, 20 },
        { "/c/k1", 6, 7, 120, 130, 25 },
    };
    struct meta m;

    meta_init(&m, jg);
    for (int s = 0; s < 4; s++) {
        Checkpoint__TaskRestore *r = state_assignment_subtask(&m.md, jg, 1, s);
        const Checkpoint__OperatorSubtaskState *st = sum_state(r);

        cr_assert_eq(st->n_keyed, 1, "subtask %d", s);
        cr_assert_str_eq(st->keyed[0]->path, want[s].path);
        cr_assert_eq(st->keyed[0]->key_group_start, want[s].start);
        cr_assert_eq(st->keyed[0]->key_group_end, want[s].end);
        cr_assert_eq(st->keyed[0]->n_offsets, 2);
        cr_assert_eq(st->keyed[0]->offsets[0], want[s].first);
        cr_assert_eq(st->keyed[0]->offsets[1], want[s].second);
        cr_assert_eq(st->keyed[0]->length, want[s].length, "subtask %d: %llu", s,
                     (unsigned long long)st->keyed[0]->length);
        checkpoint__task_restore__free_unpacked(r, NULL);
    }
    job_graph_free(jg);
}

/* An incremental RocksDB checkpoint's handle cut to a subtask's key groups
 * keeps every file of its database: the backend clips the entries (a cut
 * without them would restore nothing, silently). */
Test(state_assignment, scaling_up_keeps_every_rocksdb_file_of_a_cut_handle)
{
    struct job_graph *jg = make_graph(4);
    Checkpoint__DbFile files[2], *fps[2] = { &files[0], &files[1] };
    struct meta m;

    meta_init(&m, jg);
    for (int i = 0; i < 2; i++) {
        checkpoint__db_file__init(&files[i]);
        files[i].path = (char *)(i == 0 ? "/c/shared/x-000007.sst" : "/c/chk-9/MANIFEST-000005");
        files[i].name = (char *)(i == 0 ? "000007.sst" : "MANIFEST-000005");
        files[i].size = 100u + (uint64_t)i;
        files[i].shared = i == 0;
    }
    m.kh[0].files = fps;
    m.kh[0].n_files = 2;
    for (int s = 0; s < 2; s++) {
        Checkpoint__TaskRestore *r = state_assignment_subtask(&m.md, jg, 1, s);
        const Checkpoint__KeyedStateHandle *h = sum_state(r)->keyed[0];

        cr_assert_eq(h->key_group_end - h->key_group_start, 1, "cut to subtask %d's groups", s);
        cr_assert_eq(h->n_files, 2, "subtask %d gets the database's files", s);
        for (int i = 0; i < 2; i++) {
            cr_assert_str_eq(h->files[i]->path, files[i].path);
            cr_assert_str_eq(h->files[i]->name, files[i].name);
            cr_assert_eq(h->files[i]->size, files[i].size);
            cr_assert_eq(h->files[i]->shared, files[i].shared);
        }
        checkpoint__task_restore__free_unpacked(r, NULL);
    }
    job_graph_free(jg);
}

Test(state_assignment, scaling_down_gives_one_subtask_every_handle)
{
    struct job_graph *jg = make_graph(1);
    struct meta m;
    Checkpoint__TaskRestore *r;
    const Checkpoint__OperatorSubtaskState *st;

    meta_init(&m, jg);
    r = state_assignment_subtask(&m.md, jg, 1, 0);
    st = sum_state(r);
    cr_assert_eq(st->n_keyed, 2);
    cr_assert_eq(st->keyed[0]->length, 40);
    cr_assert_eq(st->keyed[1]->length, 45);
    cr_assert_eq(elements(st, "l"), 5);
    cr_assert_eq(entry(st, "/c/o0", "l")->n_offsets, 3);
    cr_assert_eq(entry(st, "/c/o1", "l")->n_offsets, 2);
    cr_assert_eq(elements(st, "b"), 1, "one copy of broadcast state");
    checkpoint__task_restore__free_unpacked(r, NULL);
    job_graph_free(jg);
}

Test(state_assignment, list_state_is_split_evenly_union_state_goes_to_all)
{
    struct job_graph *jg = make_graph(3);
    struct meta m;
    /* 5 elements over 3 subtasks: 2, 2, 1, in order. */
    static const size_t counts[] = { 2, 2, 1 };
    uint64_t seen[5];
    size_t nseen = 0;

    meta_init(&m, jg);
    for (int s = 0; s < 3; s++) {
        Checkpoint__TaskRestore *r = state_assignment_subtask(&m.md, jg, 1, s);
        const Checkpoint__OperatorSubtaskState *st = sum_state(r);
        const Checkpoint__OperatorStateEntry *e;

        cr_assert_eq(elements(st, "l"), counts[s], "subtask %d", s);
        for (const char *p = "/c/o0"; p != NULL; p = strcmp(p, "/c/o0") == 0 ? "/c/o1" : NULL)
            if ((e = entry(st, p, "l")) != NULL)
                for (size_t i = 0; i < e->n_offsets; i++)
                    seen[nseen++] = e->offsets[i];
        cr_assert_eq(elements(st, "u"), 2);
        e = entry(st, s % 2 == 0 ? "/c/o0" : "/c/o1", "b");
        cr_assert_not_null(e, "broadcast state of old subtask %d", s % 2);
        cr_assert_eq(elements(st, "b"), 1);
        checkpoint__task_restore__free_unpacked(r, NULL);
    }
    cr_assert_eq(nseen, 5);
    cr_assert_eq(seen[0], 1000);
    cr_assert_eq(seen[1], 1001);
    cr_assert_eq(seen[2], 1002);
    cr_assert_eq(seen[3], 2000);
    cr_assert_eq(seen[4], 2001);
    job_graph_free(jg);
}

Test(state_assignment, state_of_an_unknown_operator_is_an_error_unless_allowed)
{
    struct job_graph *jg = make_graph(2);
    struct meta m;
    spate_error err = { 0 };
    uint8_t other[16];

    meta_init(&m, jg);
    cr_assert_eq(state_assignment_check(&m.md, jg, false, "/c/_metadata", &err), 0, "%s",
                 err.message);
    memset(other, 0x5a, sizeof other);
    m.op.operator_id.data = other;
    m.op.uid = "counter";
    cr_assert_eq(state_assignment_check(&m.md, jg, false, "/c/_metadata", &err), SPATE_ESTATE);
    cr_assert(strstr(err.message, "uid 'counter'") != NULL, "%s", err.message);
    cr_assert(strstr(err.message, "/c/_metadata") != NULL, "%s", err.message);
    cr_assert_eq(state_assignment_check(&m.md, jg, true, "/c/_metadata", &err), 0);
    job_graph_free(jg);
}

Test(state_assignment, keyed_state_of_another_max_parallelism_is_an_error)
{
    struct job_graph *jg = make_graph(2);
    struct meta m;
    spate_error err = { 0 };

    meta_init(&m, jg);
    m.op.max_parallelism = 16;
    cr_assert_eq(state_assignment_check(&m.md, jg, false, "sp", &err), SPATE_ESTATE);
    cr_assert(strstr(err.message, "max parallelism 16") != NULL, "%s", err.message);
    job_graph_free(jg);
}

/* FLIP-147: sum subtask 1 had finished (no state, recorded finished). */
Test(state_assignment, a_subtask_recorded_finished_is_restored_finished_at_its_parallelism)
{
    struct job_graph *jg = make_graph(2), *jg3 = make_graph(3);
    struct meta m;
    Checkpoint__TaskRestore *r;

    meta_init(&m, jg);
    memset(&m.st[1], 0, sizeof m.st[1]);
    checkpoint__operator_subtask_state__init(&m.st[1]);
    m.st[1].subtask = 1;
    m.st[1].finished = true;
    /* At the same parallelism: subtask 1 finished, with nothing to read. */
    r = state_assignment_subtask(&m.md, jg, 1, 1);
    cr_assert(r->finished);
    cr_assert_eq(r->n_operators, 0);
    checkpoint__task_restore__free_unpacked(r, NULL);
    r = state_assignment_subtask(&m.md, jg, 1, 0);
    cr_assert(!r->finished);
    cr_assert_eq(elements(sum_state(r), "l"), 3);
    checkpoint__task_restore__free_unpacked(r, NULL);
    /* The source is not in the metadata: not finished. */
    cr_assert(!state_assignment_finished(&m.md, jg, 0, 1));
    /* At another parallelism a partly finished operator is restored by
     * subtasks that all run, the state of the running one split among them. */
    for (int s = 0; s < 3; s++) {
        r = state_assignment_subtask(&m.md, jg3, 1, s);
        cr_assert(!r->finished, "subtask %d", s);
        cr_assert_eq(elements(sum_state(r), "l"), 1, "subtask %d", s);
        checkpoint__task_restore__free_unpacked(r, NULL);
    }
    /* Every subtask finished: restored finished at any parallelism. */
    m.st[0] = m.st[1];
    m.st[0].subtask = 0;
    for (int s = 0; s < 3; s++)
        cr_assert(state_assignment_finished(&m.md, jg3, 1, s), "subtask %d", s);
    job_graph_free(jg);
    job_graph_free(jg3);
}
