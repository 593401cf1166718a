/* Unit tests of src/core/fs.c: mkdir -p and rm -r, missing paths, symbolic
 * links not followed. */
#include <criterion/criterion.h>
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
