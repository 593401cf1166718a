/* Unit tests of src/checkpoint/checkpoint_metadata.c: the `_metadata` file's
 * round trip with relative paths, a moved folder, and every kind of bad
 * file (truncated, bad magic, unknown version, checksum mismatch, a body
 * that does not decode, inconsistent handles, missing or short state
 * files), each an error naming the file. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/sha256.h"
#include "checkpoint/checkpoint_metadata.h"

static char dir[256];

static void
setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/spate-md-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
    char cmd[300];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(checkpoint_metadata, .init = setup, .fini = teardown);

static void
write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");

    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static uint8_t *
read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long n;

    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = xmalloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void
assert_contains(const char *s, const char *needle)
{
    cr_assert(strstr(s, needle) != NULL, "'%s' does not contain '%s'", s, needle);
}

/* A checkpoint of one keyed operator at parallelism 2 (max 8) and one
 * operator with list state whose file lies outside the folder. */
struct fixture {
    Checkpoint__CheckpointMetadata md;
    Checkpoint__OperatorState op[2], *ops[2];
    Checkpoint__OperatorSubtaskState st[3], *sts0[2], *sts1[1];
    Checkpoint__KeyedStateHandle kh[2], *khs0[1], *khs1[1];
    Checkpoint__OperatorStateHandle oh, *ohs[1];
    Checkpoint__OperatorStateEntry entry, *entries[1];
    uint64_t koffs0[4], koffs1[4], eoffs[3];
    uint8_t job[16], opid[2][16];
    char path0[300], path1[300], outside[300];
};

static void
fixture_init(struct fixture *f)
{
    memset(f, 0, sizeof *f);
    checkpoint__checkpoint_metadata__init(&f->md);
    f->md.checkpoint_id = 7;
    memset(f->job, 0xab, 16);
    f->md.job_id.data = f->job;
    f->md.job_id.len = 16;
    f->md.timestamp = 1234;
    f->md.job_name = "job";
    snprintf(f->path0, sizeof f->path0, "%s/op-0", dir);
    snprintf(f->path1, sizeof f->path1, "%s/op-1", dir);
    snprintf(f->outside, sizeof f->outside, "%s-shared-list", dir);
    for (int i = 0; i < 2; i++) {
        checkpoint__operator_state__init(&f->op[i]);
        memset(f->opid[i], i + 1, 16);
        f->op[i].operator_id.data = f->opid[i];
        f->op[i].operator_id.len = 16;
        f->op[i].parallelism = 2;
        f->op[i].max_parallelism = 8;
        f->ops[i] = &f->op[i];
    }
    f->op[0].name = "counter";
    f->op[0].uid = "count";
    f->op[1].name = "source";
    for (int i = 0; i < 3; i++)
        checkpoint__operator_subtask_state__init(&f->st[i]);
    for (int i = 0; i < 2; i++) {
        checkpoint__keyed_state_handle__init(&f->kh[i]);
        f->kh[i].key_group_start = (uint32_t)(4 * i);
        f->kh[i].key_group_end = (uint32_t)(4 * i + 3);
        f->kh[i].n_offsets = 4;
        f->kh[i].length = 40;
    }
    for (int k = 0; k < 4; k++) {
        f->koffs0[k] = (uint64_t)(10 * k);
        f->koffs1[k] = (uint64_t)(10 * k);
    }
    f->kh[0].offsets = f->koffs0;
    f->kh[0].path = f->path0;
    f->kh[1].offsets = f->koffs1;
    f->kh[1].path = f->path1;
    f->khs0[0] = &f->kh[0];
    f->khs1[0] = &f->kh[1];
    f->st[0].subtask = 0;
    f->st[0].n_keyed = 1;
    f->st[0].keyed = f->khs0;
    f->st[1].subtask = 1;
    f->st[1].n_keyed = 1;
    f->st[1].keyed = f->khs1;
    f->sts0[0] = &f->st[0];
    f->sts0[1] = &f->st[1];
    f->op[0].n_subtasks = 2;
    f->op[0].subtasks = f->sts0;

    checkpoint__operator_state_entry__init(&f->entry);
    f->entry.name = "offsets";
    f->entry.mode = CHECKPOINT__DISTRIBUTION_MODE__SPLIT_DISTRIBUTE;
    f->eoffs[0] = 0;
    f->eoffs[1] = 8;
    f->eoffs[2] = 16;
    f->entry.offsets = f->eoffs;
    f->entry.n_offsets = 3;
    f->entries[0] = &f->entry;
    checkpoint__operator_state_handle__init(&f->oh);
    f->oh.path = f->outside;
    f->oh.states = f->entries;
    f->oh.n_states = 1;
    f->oh.length = 24;
    f->ohs[0] = &f->oh;
    f->st[2].subtask = 0;
    f->st[2].n_operator_ = 1;
    f->st[2].operator_ = f->ohs;
    f->sts1[0] = &f->st[2];
    f->op[1].n_subtasks = 1;
    f->op[1].subtasks = f->sts1;
    f->md.n_operators = 2;
    f->md.operators = f->ops;
}

static char *
write_metadata(struct fixture *f)
{
    spate_error err = { 0 };
    char *path = NULL;

    cr_assert_eq(checkpoint_metadata_write(&f->md, dir, &path, &err), 0, "%s", err.message);
    return path;
}

Test(checkpoint_metadata, paths_inside_the_folder_are_stored_relative_and_read_back_absolute)
{
    struct fixture f;
    Checkpoint__CheckpointMetadata *back;
    spate_error err = { 0 };
    char *path;
    uint8_t *raw;
    size_t len;

    fixture_init(&f);
    path = write_metadata(&f);
    raw = read_file(path, &len);
    cr_assert_eq(memcmp(raw, "SPCK\1\0\0\0", 8), 0);
    /* The folder's name is not in the file, the outside file's is. */
    cr_assert_null(memmem(raw, len, f.path0, strlen(f.path0)));
    cr_assert_not_null(memmem(raw, len, f.outside, strlen(f.outside)));
    free(raw);
    cr_assert_eq(checkpoint_metadata_read(dir, &back, &err), 0, "%s", err.message);
    cr_assert_eq(back->checkpoint_id, 7);
    cr_assert_eq(back->n_operators, 2);
    cr_assert_str_eq(back->operators[0]->uid, "count");
    cr_assert_str_eq(back->operators[0]->subtasks[1]->keyed[0]->path, f.path1);
    cr_assert_eq(back->operators[0]->subtasks[1]->keyed[0]->offsets[3], 30);
    cr_assert_str_eq(back->operators[1]->subtasks[0]->operator_[0]->path, f.outside);
    cr_assert_eq(back->operators[1]->subtasks[0]->operator_[0]->states[0]->n_offsets, 3);
    checkpoint_metadata_free(back);
    free(path);
}

Test(checkpoint_metadata, a_moved_folder_resolves_against_its_new_place)
{
    struct fixture f;
    Checkpoint__CheckpointMetadata *back;
    spate_error err = { 0 };
    char moved[300], want[320], cmd[1000];

    fixture_init(&f);
    free(write_metadata(&f));
    snprintf(moved, sizeof moved, "%s/moved", dir);
    snprintf(cmd, sizeof cmd, "mkdir '%s' && cp '%s/_metadata' '%s/'", moved, dir, moved);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(checkpoint_metadata_read(moved, &back, &err), 0, "%s", err.message);
    snprintf(want, sizeof want, "%s/op-0", moved);
    cr_assert_str_eq(back->operators[0]->subtasks[0]->keyed[0]->path, want);
    checkpoint_metadata_free(back);
}

/* Reads path after its bytes were changed by edit; returns the error. */
static int
read_edited(const char *path, void (*edit)(uint8_t *buf, size_t *len), spate_error *err)
{
    Checkpoint__CheckpointMetadata *back = NULL;
    size_t len;
    uint8_t *raw = read_file(path, &len);
    int rc;

    edit(raw, &len);
    write_file(path, raw, len);
    free(raw);
    rc = checkpoint_metadata_read(path, &back, err);
    cr_assert_null(back);
    return rc;
}

static void
cut_to_ten(uint8_t *buf, size_t *len)
{
    (void)buf;
    *len = 10;
}

static void
cut_last_byte(uint8_t *buf, size_t *len)
{
    (void)buf;
    (*len)--;
}

static void
bad_magic(uint8_t *buf, size_t *len)
{
    (void)len;
    buf[0] = 'X';
}

static void
version_two(uint8_t *buf, size_t *len)
{
    (void)len;
    buf[4] = 2;
}

static void
flip_middle(uint8_t *buf, size_t *len)
{
    buf[*len / 2] ^= 0x40;
}

/* A body that is no CheckpointMetadata, under a correct checksum. */
static void
garbage_body(uint8_t *buf, size_t *len)
{
    memset(buf + 8, 0xff, 12);
    *len = 8 + 12 + 32;
    sha256(buf, 20, buf + 20);
}

Test(checkpoint_metadata, truncated_files_are_errors_naming_the_file)
{
    struct fixture f;
    spate_error err = { 0 };
    char *path;

    fixture_init(&f);
    path = write_metadata(&f);
    cr_assert_eq(read_edited(path, cut_to_ten, &err), SPATE_EPROTO);
    assert_contains(err.message, path);
    assert_contains(err.message, "truncated: 10 bytes");
    free(write_metadata(&f));
    cr_assert_eq(read_edited(path, cut_last_byte, &err), SPATE_EPROTO);
    assert_contains(err.message, path);
    assert_contains(err.message, "corrupt or truncated");
    {
        Checkpoint__CheckpointMetadata *back = NULL;

        write_file(path, "", 0);
        cr_assert_eq(checkpoint_metadata_read(path, &back, &err), SPATE_EPROTO);
        assert_contains(err.message, "truncated: 0 bytes");
        cr_assert_null(back);
    }
    free(path);
}

Test(checkpoint_metadata, bad_magic_version_checksum_and_body_are_each_named)
{
    struct fixture f;
    spate_error err = { 0 };
    char *path;

    fixture_init(&f);
    path = write_metadata(&f);
    cr_assert_eq(read_edited(path, bad_magic, &err), SPATE_EPROTO);
    assert_contains(err.message, "is not checkpoint metadata");
    assert_contains(err.message, path);
    free(write_metadata(&f));
    cr_assert_eq(read_edited(path, version_two, &err), SPATE_EPROTO);
    assert_contains(err.message, "format version 2");
    free(write_metadata(&f));
    cr_assert_eq(read_edited(path, flip_middle, &err), SPATE_EPROTO);
    assert_contains(err.message, "SHA-256 does not match");
    free(write_metadata(&f));
    cr_assert_eq(read_edited(path, garbage_body, &err), SPATE_EPROTO);
    assert_contains(err.message, "does not decode");
    assert_contains(err.message, path);
    free(path);
}

Test(checkpoint_metadata, handles_that_do_not_fit_their_operator_are_refused)
{
    struct fixture f;
    spate_error err = { 0 };
    Checkpoint__CheckpointMetadata *back;
    char *path;

    fixture_init(&f);
    f.kh[1].key_group_end = 8; /* max parallelism 8: key groups 0-7 */
    f.kh[1].n_offsets = 5;
    path = write_metadata(&f);
    cr_assert_eq(checkpoint_metadata_read(path, &back, &err), SPATE_EPROTO);
    assert_contains(err.message, "key groups 4-8");
    fixture_init(&f);
    f.st[1].subtask = 2;
    free(write_metadata(&f));
    cr_assert_eq(checkpoint_metadata_read(path, &back, &err), SPATE_EPROTO);
    assert_contains(err.message, "subtask 2 of 2");
    free(path);
}

Test(checkpoint_metadata, a_missing_metadata_file_is_enoent_naming_it)
{
    Checkpoint__CheckpointMetadata *back;
    spate_error err = { 0 };

    cr_assert_eq(checkpoint_metadata_read(dir, &back, &err), SPATE_ENOENT);
    assert_contains(err.message, dir);
    assert_contains(err.message, "_metadata");
}

Test(checkpoint_metadata, missing_and_short_state_files_are_found_before_a_restore)
{
    struct fixture f;
    Checkpoint__CheckpointMetadata *back;
    spate_error err = { 0 };
    char big[64] = { 0 };
    char *path;

    fixture_init(&f);
    path = write_metadata(&f);
    write_file(f.path0, big, sizeof big);
    write_file(f.outside, big, 24);
    cr_assert_eq(checkpoint_metadata_read(path, &back, &err), 0, "%s", err.message);
    /* op-1 was never written. */
    cr_assert_eq(checkpoint_metadata_check_files(back, path, &err), SPATE_ENOENT);
    assert_contains(err.message, f.path1);
    assert_contains(err.message, "is missing");
    assert_contains(err.message, "'counter' (subtask 1)");
    assert_contains(err.message, path);
    /* op-1 shorter than its handle's length (40). */
    write_file(f.path1, big, 20);
    cr_assert_eq(checkpoint_metadata_check_files(back, path, &err), SPATE_EPROTO);
    assert_contains(err.message, "is truncated: 20 bytes");
    write_file(f.path1, big, 40);
    cr_assert_eq(checkpoint_metadata_check_files(back, path, &err), 0, "%s", err.message);
    unlink(f.outside);
    cr_assert_eq(checkpoint_metadata_check_files(back, path, &err), SPATE_ENOENT);
    assert_contains(err.message, f.outside);
    checkpoint_metadata_free(back);
    free(path);
}
