/* Unit tests of src/core/fs.c: mkdir -p and rm -r, missing paths, symbolic
 * links not followed; copies: the bytes, a file of their own, from a file
 * system the kernel cannot copy in (/proc), into no existing file. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"

static bool
exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

Test(fs, mkdirs_and_remove_tree)
{
    char base[64], deep[128], file[160], outside[128], link[160];
    spate_error err = { 0 };
    FILE *f;

    snprintf(base, sizeof base, "/tmp/spate-fs-XXXXXX");
    cr_assert_not_null(mkdtemp(base));
    snprintf(deep, sizeof deep, "%s/a/b/c", base);
    cr_assert_eq(fs_mkdirs(deep, &err), 0, "%s", err.message);
    cr_assert_eq(fs_mkdirs(deep, &err), 0, "existing folders are fine");
    snprintf(file, sizeof file, "%s/f", deep);
    f = fopen(file, "w");
    cr_assert_not_null(f);
    fputs("x", f);
    fclose(f);
    /* A link out of the tree: removed, its target kept. */
    snprintf(outside, sizeof outside, "%s-keep", base);
    cr_assert_eq(fs_mkdirs(outside, &err), 0);
    snprintf(link, sizeof link, "%s/a/out", base);
    cr_assert_eq(symlink(outside, link), 0);
    cr_assert_eq(fs_remove_tree(base, &err), 0, "%s", err.message);
    cr_assert_not(exists(base));
    cr_assert(exists(outside));
    cr_assert_eq(fs_remove_tree(base, &err), 0, "a missing path is fine");
    cr_assert_eq(fs_remove_tree(outside, &err), 0);
}

Test(fs, mkdirs_names_what_it_cannot_create)
{
    spate_error err = { 0 };

    cr_assert_neq(fs_mkdirs("/proc/spate-no/such", &err), 0);
    cr_assert(strstr(err.message, "/proc/spate-no") != NULL, "%s", err.message);
}

/* A file of n bytes that do not repeat within 1 MiB; returns its bytes. */
static uint8_t *
write_file(const char *path, size_t n)
{
    uint8_t *b = malloc(n);
    FILE *f = fopen(path, "w");
    uint64_t x = 88172645463325252ull;

    cr_assert_not_null(f);
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b[i] = (uint8_t)x;
    }
    cr_assert_eq(fwrite(b, 1, n, f), n);
    fclose(f);
    return b;
}

static uint8_t *
read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    uint8_t *b = NULL;
    size_t cap = 0;

    cr_assert_not_null(f, "%s", path);
    *n = 0;
    for (;;) {
        size_t k;

        if (*n == cap)
            b = realloc(b, cap = cap ? 2 * cap : 4096);
        if ((k = fread(b + *n, 1, cap - *n, f)) == 0)
            break;
        *n += k;
    }
    fclose(f);
    return b;
}

Test(fs, copy_file_is_a_file_of_its_own_with_the_same_bytes)
{
    char base[64], src[96], dst[96];
    const size_t n = 3 * (1u << 20) + 12345; /* more than one read's worth */
    spate_error err = { 0 };
    uint8_t *want, *got;
    struct stat a, b;
    uint64_t size = 0;
    size_t len;

    snprintf(base, sizeof base, "/tmp/spate-fs-XXXXXX");
    cr_assert_not_null(mkdtemp(base));
    snprintf(src, sizeof src, "%s/src", base);
    snprintf(dst, sizeof dst, "%s/dst", base);
    want = write_file(src, n);
    cr_assert_eq(fs_copy_file(src, dst, &size, &err), 0, "%s", err.message);
    cr_assert_eq(size, n);
    got = read_file(dst, &len);
    cr_assert_eq(len, n);
    cr_assert_eq(memcmp(got, want, n), 0, "the copy's bytes differ");
    free(got);
    /* Not the source's inode: the copy cut short leaves the source whole
     * (a checkpoint's file and the running database's). */
    cr_assert_eq(stat(src, &a), 0);
    cr_assert_eq(stat(dst, &b), 0);
    cr_assert_neq(a.st_ino, b.st_ino, "the copy is the source's inode");
    cr_assert_eq(truncate(dst, 1), 0);
    got = read_file(src, &len);
    cr_assert_eq(len, n, "cutting the copy cut the source");
    cr_assert_eq(memcmp(got, want, n), 0);
    free(got);
    /* dst exists: no copy into it, and it is left as it was. */
    cr_assert_neq(fs_copy_file(src, dst, NULL, &err), 0);
    cr_assert(strstr(err.message, dst) != NULL, "%s", err.message);
    cr_assert_eq(stat(dst, &b), 0);
    cr_assert_eq(b.st_size, 1);
    free(want);
    cr_assert_eq(fs_remove_tree(base, &err), 0, "%s", err.message);
}

Test(fs, copy_file_reads_what_the_kernel_cannot_copy)
{
    char base[64], dst[96];
    spate_error err = { 0 };
    uint64_t size = 0;
    uint8_t *got;
    size_t len;

    /* /proc's files: another file system, and sizes of 0 in stat. */
    snprintf(base, sizeof base, "/tmp/spate-fs-XXXXXX");
    cr_assert_not_null(mkdtemp(base));
    snprintf(dst, sizeof dst, "%s/status", base);
    cr_assert_eq(fs_copy_file("/proc/self/status", dst, &size, &err), 0, "%s", err.message);
    got = read_file(dst, &len);
    cr_assert_gt(len, 0, "nothing copied from /proc");
    cr_assert_eq(size, len);
    cr_assert(memmem(got, len, "Pid:", 4) != NULL, "not /proc/self/status: %.*s", (int)len, got);
    free(got);
    cr_assert_eq(fs_remove_tree(base, &err), 0, "%s", err.message);
}

Test(fs, copy_file_names_a_missing_source)
{
    spate_error err = { 0 };

    cr_assert_neq(fs_copy_file("/tmp/spate-fs-no-such-file", "/tmp/spate-fs-no-dst", NULL, &err),
                  0);
    cr_assert(strstr(err.message, "/tmp/spate-fs-no-such-file") != NULL, "%s", err.message);
    cr_assert_eq(access("/tmp/spate-fs-no-dst", F_OK), -1, "a failed copy left its file");
}
