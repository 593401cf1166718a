/* Unit tests of the shared state registry (checkpoint/shared_state_registry.h)
 * over real files in a temporary folder: a file shared by two retained
 * checkpoints survives the subsumption of the first and goes with the
 * second; a checkpoint naming a shared file that is gone is refused by the
 * file's name; a sweep deletes what no checkpoint references (an upload cut
 * short) and nothing else. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/shared_state_registry.h"
#include "core/fs.h"

static char dir[64];

static void
setup(void)
{
    strcpy(dir, "/tmp/spate-registry-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
    spate_error err = { 0 };

    fs_remove_tree(dir, &err);
}

TestSuite(shared_state_registry, .init = setup, .fini = teardown);

/* dir/name, made (with some bytes) when make is set; a static buffer per
 * slot. */
static const char *
file(int slot, const char *name, bool make)
{
    static char paths[8][128];
    FILE *f;

    snprintf(paths[slot], sizeof paths[slot], "%s/%s", dir, name);
    if (make) {
        cr_assert_not_null(f = fopen(paths[slot], "w"));
        fputs("sst bytes", f);
        fclose(f);
    }
    return paths[slot];
}

static bool
exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

/* The metadata of a checkpoint of one subtask whose keyed state is the
 * RocksDB files paths[0..n) (shared), and a private MANIFEST. */
struct md {
    Checkpoint__CheckpointMetadata md;
    Checkpoint__OperatorState op, *ops[1];
    Checkpoint__OperatorSubtaskState st, *sts[1];
    Checkpoint__KeyedStateHandle kh, *khs[1];
    Checkpoint__DbFile files[8], *fps[8];
};

static void
md_init(struct md *m, const char *const *paths, size_t n)
{
    checkpoint__checkpoint_metadata__init(&m->md);
    checkpoint__operator_state__init(&m->op);
    checkpoint__operator_subtask_state__init(&m->st);
    checkpoint__keyed_state_handle__init(&m->kh);
    for (size_t i = 0; i <= n; i++) {
        checkpoint__db_file__init(&m->files[i]);
        m->files[i].path = (char *)(i < n ? paths[i] : "/nowhere/chk-1/MANIFEST-000001");
        m->files[i].name = (char *)"x.sst";
        m->files[i].shared = i < n; /* the private one is not the registry's */
        m->fps[i] = &m->files[i];
    }
    m->kh.files = m->fps;
    m->kh.n_files = n + 1;
    m->khs[0] = &m->kh;
    m->st.keyed = m->khs;
    m->st.n_keyed = 1;
    m->sts[0] = &m->st;
    m->op.subtasks = m->sts;
    m->op.n_subtasks = 1;
    m->ops[0] = &m->op;
    m->md.operators = m->ops;
    m->md.n_operators = 1;
}

Test(shared_state_registry, a_subsumed_checkpoint_deletes_only_files_no_retained_one_uses)
{
    struct shared_state_registry *r = shared_state_registry_new();
    const char *a = file(0, "a.sst", true), *b = file(1, "b.sst", true),
               *c = file(2, "c.sst", true);
    const char *one[] = { a, b }, *two[] = { b, c };
    struct md m1, m2;
    spate_error err = { 0 };

    md_init(&m1, one, 2);
    md_init(&m2, two, 2);
    cr_assert_eq(shared_state_registry_register(r, 1, &m1.md, &err), 0, "%s", err.message);
    cr_assert_eq(shared_state_registry_register(r, 2, &m2.md, &err), 0, "%s", err.message);
    /* Registered again (a new leader reading the store): counted once. */
    cr_assert_eq(shared_state_registry_register(r, 2, &m2.md, &err), 0, "%s", err.message);
    cr_assert_eq(shared_state_registry_refs(r, a), 1);
    cr_assert_eq(shared_state_registry_refs(r, b), 2, "b is referenced by both");
    cr_assert_eq(shared_state_registry_refs(r, c), 1);
    cr_assert(shared_state_registry_contains(r, 1));

    cr_assert_eq(shared_state_registry_unregister(r, 1), 1, "checkpoint 1 alone used a");
    cr_assert(!exists(a), "a, which no retained checkpoint uses, is deleted");
    cr_assert(exists(b), "b, which checkpoint 2 uses, stays");
    cr_assert(exists(c));
    cr_assert_eq(shared_state_registry_refs(r, b), 1);
    cr_assert(!shared_state_registry_contains(r, 1));
    cr_assert_eq(shared_state_registry_unregister(r, 1), 0, "an unknown id deletes nothing");

    cr_assert_eq(shared_state_registry_unregister(r, 2), 2);
    cr_assert(!exists(b) && !exists(c), "the last checkpoint's files go with it");
    shared_state_registry_free(r);
}

Test(shared_state_registry, a_checkpoint_naming_a_shared_file_that_is_gone_is_refused_by_its_name)
{
    struct shared_state_registry *r = shared_state_registry_new();
    const char *a = file(0, "a.sst", true), *gone = file(1, "gone.sst", false);
    const char *files[] = { a, gone };
    struct md m;
    spate_error err = { 0 };

    md_init(&m, files, 2);
    cr_assert_eq(shared_state_registry_register(r, 7, &m.md, &err), SPATE_ENOENT);
    cr_assert(strstr(err.message, gone) != NULL, "the message names the file: %s", err.message);
    cr_assert(!shared_state_registry_contains(r, 7), "nothing of it is registered");
    cr_assert_eq(shared_state_registry_refs(r, a), 0);
    shared_state_registry_free(r);
}

Test(shared_state_registry, a_sweep_deletes_what_no_checkpoint_references_and_nothing_else)
{
    struct shared_state_registry *r = shared_state_registry_new();
    const char *kept = file(0, "kept.sst", true), *orphan = file(1, "orphan.sst", true);
    const char *half = file(2, "half-uploaded.sst", true);
    const char *files[] = { kept };
    struct md m;
    spate_error err = { 0 };

    md_init(&m, files, 1);
    cr_assert_eq(shared_state_registry_register(r, 3, &m.md, &err), 0, "%s", err.message);
    cr_assert_eq(shared_state_registry_sweep(r, dir), 2);
    cr_assert(exists(kept));
    cr_assert(!exists(orphan) && !exists(half));
    cr_assert_eq(shared_state_registry_sweep(r, "/nonexistent-spate-shared"), 0,
                 "no shared folder: nothing to sweep");
    shared_state_registry_free(r);
}

Test(shared_state_registry, a_checkpoint_that_will_not_complete_takes_back_only_its_own_uploads)
{
    struct shared_state_registry *r = shared_state_registry_new();
    const char *kept = file(0, "kept.sst", true), *fresh = file(1, "fresh.sst", true);
    const char *retained[] = { kept }, *aborted[] = { kept, fresh };
    struct md m1, m2;
    spate_error err = { 0 };

    md_init(&m1, retained, 1);
    md_init(&m2, aborted, 2);
    cr_assert_eq(shared_state_registry_register(r, 1, &m1.md, &err), 0, "%s", err.message);
    cr_assert_eq(shared_state_registry_discard(r, &m2.st), 1);
    cr_assert(exists(kept), "a retained checkpoint's file stays");
    cr_assert(!exists(fresh), "the aborted checkpoint's upload goes");
    shared_state_registry_free(r);
}
