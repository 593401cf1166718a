/* Unit tests of src/checkpoint/checkpoint_storage.c and its file system
 * implementation: pointers (file:///abs, file:/abs, file://localhost/abs,
 * plain paths, relative ones resolved against a base or refused, other
 * hosts and unknown schemes refused naming them), chk-<n> locations and
 * their listing, state file paths, `_metadata` written atomically and read
 * back through a folder or a URI, and disposal that removes only what it
 * owns. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint_metadata.h"
#include "checkpoint/checkpoint_storage.h"
#include "core/alloc.h"

static char dir[256];

static void
setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/spate-cs-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
    char cmd[300];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(checkpoint_storage, .init = setup, .fini = teardown);

static bool
exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

static void
touch(const char *path)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f, "%s", path);
    fputs("state", f);
    fclose(f);
}

static void
assert_contains(const char *s, const char *needle)
{
    cr_assert(strstr(s, needle) != NULL, "'%s' does not contain '%s'", s, needle);
}

/* The path pointer names, or the error's message (both malloc'd). */
static char *
path_of(const char *pointer, const char *base, int *rc)
{
    spate_error err = { 0 };
    char *path = NULL;

    *rc = checkpoint_storage_path(pointer, base, &path, &err);
    if (*rc != 0) {
        cr_assert_null(path);
        return xstrdup(err.message);
    }
    return path;
}

static void
assert_path(const char *pointer, const char *base, const char *want)
{
    int rc;
    char *got = path_of(pointer, base, &rc);

    cr_assert_eq(rc, 0, "'%s': %s", pointer, got);
    cr_assert_str_eq(got, want, "'%s'", pointer);
    free(got);
}

static void
assert_refused(const char *pointer, const char *base, const char *because)
{
    int rc;
    char *msg = path_of(pointer, base, &rc);

    cr_assert_eq(rc, SPATE_EINVAL, "'%s' gave %d: %s", pointer, rc, msg);
    assert_contains(msg, because);
    free(msg);
}

Test(checkpoint_storage, file_uris_and_absolute_paths_name_local_paths)
{
    assert_path("/data/checkpoints", NULL, "/data/checkpoints");
    assert_path("/data/checkpoints///", NULL, "/data/checkpoints");
    assert_path("file:///data/checkpoints", NULL, "/data/checkpoints");
    assert_path("file:/data/checkpoints/", NULL, "/data/checkpoints");
    assert_path("FILE:///data/x", NULL, "/data/x");
    assert_path("file://localhost/data/x", NULL, "/data/x");
    assert_path("file:///data/with%20space", NULL, "/data/with space");
    assert_path("/", NULL, "/");
}

Test(checkpoint_storage, relative_paths_resolve_against_the_base_or_are_refused)
{
    assert_path("savepoints", "/home/me", "/home/me/savepoints");
    assert_path("file:savepoints/", "/home/me", "/home/me/savepoints");
    assert_refused("savepoints", NULL, "'savepoints' is not an absolute path");
    assert_refused("file:sp", NULL, "'file:sp' is not an absolute path");
    /* A colon after a slash is part of a path, no scheme. */
    assert_path("./a:b", "/w", "/w/./a:b");
}

Test(checkpoint_storage, other_hosts_unknown_schemes_and_empty_pointers_are_refused)
{
    assert_refused("s3://bucket/checkpoints", NULL, "the scheme 's3' is not supported");
    assert_refused("hdfs:///flink/sp", "/w", "the scheme 'hdfs' is not supported");
    assert_refused("file://otherhost/data", NULL, "names the host 'otherhost'");
    assert_refused("file://host", NULL, "without a path");
    assert_refused("file:///bad%zzescape", NULL, "'%'");
    assert_refused("", NULL, "empty");
    assert_refused("file:", "/w", "names no path");
}

Test(checkpoint_storage, a_jobs_checkpoints_are_chk_folders_under_its_id)
{
    struct checkpoint_storage *s = NULL;
    spate_error err = { 0 };
    spate_id job, vertex;
    char *uri = xasprintf("file://%s/cps/", dir), *want, *loc = NULL, *file = NULL;
    uint64_t *ids = NULL;
    size_t n = 9;

    memset(&job, 0x11, sizeof job);
    memset(&vertex, 0x22, sizeof vertex);
    cr_assert_eq(checkpoint_storage_new(uri, &job, &s, &err), 0, "%s", err.message);
    want = xasprintf("%s/cps/%s", dir, id_str(&job).s);
    cr_assert_str_eq(checkpoint_storage_job_dir(s), want);
    cr_assert_eq(checkpoint_storage_list(s, &ids, &n, &err), 0, "no folder yet: %s", err.message);
    cr_assert_eq(n, 0);
    free(ids);
    for (uint64_t id = 1; id <= 3; id++) {
        cr_assert_eq(checkpoint_storage_init_checkpoint(s, id * 5, &loc, &err), 0, "%s",
                     err.message);
        free(loc);
    }
    cr_assert_eq(checkpoint_storage_init_checkpoint(s, 12, &loc, &err), 0);
    free(want);
    want = xasprintf("%s/cps/%s/chk-12", dir, id_str(&job).s);
    cr_assert_str_eq(loc, want);
    cr_assert(exists(loc));
    /* Names of no checkpoint are not listed. */
    free(want);
    want = xasprintf("%s/cps/%s/chk-x", dir, id_str(&job).s);
    cr_assert_eq(mkdir(want, 0755), 0);
    free(want);
    want = xasprintf("%s/cps/%s/shared", dir, id_str(&job).s);
    cr_assert_eq(mkdir(want, 0755), 0);
    cr_assert_eq(checkpoint_storage_list(s, &ids, &n, &err), 0, "%s", err.message);
    cr_assert_eq(n, 4);
    cr_assert_eq(ids[0], 5);
    cr_assert_eq(ids[1], 10);
    cr_assert_eq(ids[2], 12);
    cr_assert_eq(ids[3], 15);
    free(ids);
    /* A task's state file of that checkpoint. */
    cr_assert_eq(checkpoint_storage_state_file(loc, &vertex, 3, &file, &err), 0, "%s", err.message);
    free(want);
    want = xasprintf("%s/%s-3.state", loc, id_str(&vertex).s);
    cr_assert_str_eq(file, want);
    free(file);
    /* Subsumed: chk-10 goes, the others stay. */
    cr_assert_eq(checkpoint_storage_dispose_checkpoint(s, 10, &err), 0, "%s", err.message);
    cr_assert_eq(checkpoint_storage_list(s, &ids, &n, &err), 0);
    cr_assert_eq(n, 3);
    cr_assert_eq(ids[1], 12);
    free(ids);
    /* The job's folder goes only once it is empty. */
    checkpoint_storage_dispose_job(s);
    cr_assert(exists(checkpoint_storage_job_dir(s)));
    free(want);
    want = xasprintf("rm -r '%s'/*", checkpoint_storage_job_dir(s));
    cr_assert_eq(system(want), 0);
    checkpoint_storage_dispose_job(s);
    cr_assert_not(exists(checkpoint_storage_job_dir(s)));
    free(want);
    free(loc);
    free(uri);
    checkpoint_storage_free(s);
}

Test(checkpoint_storage, a_job_with_an_unsupported_checkpoint_folder_has_no_storage)
{
    struct checkpoint_storage *s = NULL;
    spate_error err = { 0 };
    spate_id job;

    memset(&job, 0x11, sizeof job);
    cr_assert_eq(checkpoint_storage_new("s3://bucket/cps", &job, &s, &err), SPATE_EINVAL);
    cr_assert_null(s);
    assert_contains(err.message, "state.checkpoints.dir");
    assert_contains(err.message, "'s3'");
    cr_assert_eq(checkpoint_storage_new("cps", &job, &s, &err), SPATE_EINVAL);
    assert_contains(err.message, "not an absolute path");
}

/* A savepoint of one operator whose two state files lie in its folder,
 * one file outside it. */
struct fixture {
    Checkpoint__CheckpointMetadata md;
    Checkpoint__OperatorState op, *ops[1];
    Checkpoint__OperatorSubtaskState st[2], *sts[2];
    Checkpoint__OperatorStateHandle oh[2], *ohs0[1], *ohs1[1];
    uint8_t job[16], opid[16];
};

static void
fixture_init(struct fixture *f, char *files[2])
{
    memset(f, 0, sizeof *f);
    checkpoint__checkpoint_metadata__init(&f->md);
    f->md.checkpoint_id = 3;
    f->md.type = CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT;
    memset(f->job, 0xab, 16);
    f->md.job_id.data = f->job;
    f->md.job_id.len = 16;
    f->md.job_name = "job";
    checkpoint__operator_state__init(&f->op);
    memset(f->opid, 1, 16);
    f->op.operator_id.data = f->opid;
    f->op.operator_id.len = 16;
    f->op.parallelism = 2;
    f->op.max_parallelism = 8;
    f->op.name = "source";
    for (int i = 0; i < 2; i++) {
        checkpoint__operator_subtask_state__init(&f->st[i]);
        checkpoint__operator_state_handle__init(&f->oh[i]);
        f->oh[i].path = files[i];
        f->oh[i].length = 5;
        f->st[i].subtask = i;
        f->st[i].n_operator_ = 1;
        f->sts[i] = &f->st[i];
    }
    f->ohs0[0] = &f->oh[0];
    f->ohs1[0] = &f->oh[1];
    f->st[0].operator_ = f->ohs0;
    f->st[1].operator_ = f->ohs1;
    f->op.n_subtasks = 2;
    f->op.subtasks = f->sts;
    f->ops[0] = &f->op;
    f->md.n_operators = 1;
    f->md.operators = f->ops;
}

Test(checkpoint_storage, metadata_is_written_atomically_and_read_back_through_any_pointer)
{
    struct fixture f;
    spate_error err = { 0 };
    spate_id job;
    Checkpoint__CheckpointMetadata *back = NULL;
    char *target = xasprintf("%s/sp", dir), *loc = NULL, *meta = NULL, *read_from = NULL;
    char *files[2], *uri, *tmp, *name;

    memset(&job, 0x33, sizeof job);
    cr_assert_eq(checkpoint_storage_init_savepoint(target, &job, &loc, &err), 0, "%s", err.message);
    name = strrchr(loc, '/') + 1;
    cr_assert_eq(strncmp(name, "savepoint-333333-", 17), 0, "%s", name);
    cr_assert_eq(strlen(name), strlen("savepoint-333333-") + 12, "%s", name);
    files[0] = xasprintf("%s/a-0.state", loc);
    files[1] = xasprintf("%s/a-1.state", loc);
    touch(files[0]);
    touch(files[1]);
    fixture_init(&f, files);
    cr_assert_eq(checkpoint_storage_write_metadata(loc, &f.md, &meta, &err), 0, "%s", err.message);
    tmp = xasprintf("%s/_metadata.inprogress", loc);
    cr_assert_not(exists(tmp), "no temporary file is left");
    free(tmp);
    /* The folder, its `_metadata` and their URIs all name the same file. */
    uri = xasprintf("file://%s/", loc);
    cr_assert_eq(checkpoint_storage_read(uri, &back, &read_from, &err), 0, "%s", err.message);
    cr_assert_str_eq(read_from, meta);
    cr_assert_eq(back->checkpoint_id, 3);
    cr_assert_str_eq(back->operators[0]->subtasks[1]->operator_[0]->path, files[1]);
    checkpoint_metadata_free(back);
    free(read_from);
    cr_assert_eq(checkpoint_storage_resolve(loc, &read_from, &err), 0);
    cr_assert_str_eq(read_from, meta);
    free(read_from);
    cr_assert_eq(checkpoint_storage_read("s3://b/sp", &back, NULL, &err), SPATE_EINVAL);
    assert_contains(err.message, "'s3'");
    for (int i = 0; i < 2; i++)
        free(files[i]);
    free(uri);
    free(meta);
    free(loc);
    free(target);
}

Test(checkpoint_storage, disposing_of_a_savepoint_removes_only_what_it_owns)
{
    struct fixture f;
    spate_error err = { 0 };
    spate_id job;
    char *target = xasprintf("%s/sp", dir), *loc = NULL, *meta = NULL, *files[2], *mine, *uri;

    memset(&job, 0x33, sizeof job);
    cr_assert_eq(checkpoint_storage_init_savepoint(target, &job, &loc, &err), 0, "%s", err.message);
    files[0] = xasprintf("%s/a-0.state", loc);
    files[1] = xasprintf("%s/outside.state", dir); /* named, but not the savepoint's */
    touch(files[0]);
    touch(files[1]);
    fixture_init(&f, files);
    cr_assert_eq(checkpoint_storage_write_metadata(loc, &f.md, &meta, &err), 0, "%s", err.message);
    mine = xasprintf("%s/notes", loc);
    touch(mine);
    /* Unknown schemes and relative paths delete nothing. */
    cr_assert_eq(checkpoint_storage_dispose_savepoint("s3://b/x", &err), SPATE_EINVAL);
    cr_assert_eq(checkpoint_storage_dispose_savepoint("sp", &err), SPATE_EINVAL);
    cr_assert(exists(meta));
    uri = xasprintf("file:%s", meta);
    cr_assert_eq(checkpoint_storage_dispose_savepoint(uri, &err), 0, "%s", err.message);
    cr_assert_not(exists(files[0]));
    cr_assert_not(exists(meta));
    cr_assert(exists(files[1]), "a file outside the folder stays");
    cr_assert(exists(mine), "a file the metadata does not name stays");
    cr_assert(exists(loc), "the folder stays while something is in it");
    /* Again: no `_metadata` to read, nothing deleted, the error names it. */
    cr_assert_eq(checkpoint_storage_dispose_savepoint(loc, &err), SPATE_ENOENT);
    assert_contains(err.message, "_metadata");
    cr_assert(exists(mine));
    /* With nothing else in it the folder goes too. */
    unlink(mine);
    touch(files[0]);
    cr_assert_eq(checkpoint_storage_write_metadata(loc, &f.md, NULL, &err), 0);
    cr_assert_eq(checkpoint_storage_dispose_savepoint(loc, &err), 0, "%s", err.message);
    cr_assert_not(exists(loc));
    cr_assert(exists(target));
    free(uri);
    free(mine);
    free(files[0]);
    free(files[1]);
    free(meta);
    free(loc);
    free(target);
}

Test(checkpoint_storage, an_aborted_location_is_removed_with_its_files)
{
    struct checkpoint_storage *s = NULL;
    spate_error err = { 0 };
    spate_id job;
    char *loc = NULL, *file;

    memset(&job, 0x44, sizeof job);
    cr_assert_eq(checkpoint_storage_new(dir, &job, &s, &err), 0, "%s", err.message);
    cr_assert_eq(checkpoint_storage_init_checkpoint(s, 1, &loc, &err), 0, "%s", err.message);
    file = xasprintf("%s/x.state", loc);
    touch(file);
    cr_assert_eq(checkpoint_storage_dispose_location(loc, &err), 0, "%s", err.message);
    cr_assert_not(exists(loc));
    cr_assert(exists(checkpoint_storage_job_dir(s)));
    cr_assert_eq(checkpoint_storage_dispose_location(loc, &err), 0, "a missing one is fine");
    free(file);
    free(loc);
    checkpoint_storage_free(s);
}
