/* Unit tests of src/core/tmp_dir.c: a process's folders are locked while
 * it lives; the sweep removes those of a process killed by SIGKILL and
 * nothing else. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/config.h"
#include "core/fs.h"
#include "core/tmp_dir.h"

static bool
exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

/* A child makes a folder, writes its path to the pipe, fills it and waits
 * to be killed. */
static pid_t
child_with_folder(const char *base, const char *kind, char *path, size_t size)
{
    int fds[2];
    pid_t pid;
    ssize_t n;

    cr_assert_eq(pipe(fds), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        struct tmp_dir d;
        spate_error err = { 0 };
        char file[600];
        FILE *f;

        if (tmp_dir_make(base, kind, &d, &err) != 0)
            _exit(1);
        snprintf(file, sizeof file, "%s/blob_1", d.path);
        if ((f = fopen(file, "w")) != NULL)
            fclose(f);
        if (write(fds[1], d.path, strlen(d.path)) < 0)
            _exit(1);
        close(fds[1]);
        pause();
        _exit(0);
    }
    close(fds[1]);
    n = read(fds[0], path, size - 1);
    close(fds[0]);
    cr_assert_gt(n, 0, "the child made no folder");
    path[n] = '\0';
    return pid;
}

Test(tmp_dir, the_sweep_removes_only_the_folders_of_killed_processes)
{
    char base[64], killed[600], alive[600], foreign[128];
    struct tmp_dir mine;
    spate_error err = { 0 };
    pid_t k, a;

    snprintf(base, sizeof base, "/tmp/spate-tmpdir-test-XXXXXX");
    cr_assert_not_null(mkdtemp(base));
    k = child_with_folder(base, "blobs", killed, sizeof killed);
    a = child_with_folder(base, "blobs", alive, sizeof alive);
    cr_assert_eq(tmp_dir_make(base, "web", &mine, &err), 0, "%s", err.message);
    cr_assert_eq(strncmp(strrchr(mine.path, '/') + 1, "spate-web-", 10), 0, "%s", mine.path);
    /* An older spate's folder without a lock, and one not of spate's. */
    snprintf(foreign, sizeof foreign, "%s/spate-libraries-old", base);
    cr_assert_eq(mkdir(foreign, 0700), 0);

    cr_assert_eq(tmp_dir_sweep(base), 0, "every owner is alive");
    kill(k, SIGKILL);
    waitpid(k, NULL, 0);
    cr_assert_eq(tmp_dir_sweep(base), 1);
    cr_assert_not(exists(killed), "%s was left by a killed process", killed);
    cr_assert(exists(alive));
    cr_assert(exists(mine.path));
    cr_assert(exists(foreign));

    kill(a, SIGKILL);
    waitpid(a, NULL, 0);
    tmp_dir_remove(&mine);
    cr_assert_null(mine.path);
    cr_assert_eq(tmp_dir_sweep(base), 1);
    cr_assert_not(exists(alive));
    cr_assert(exists(foreign));
    cr_assert_eq(fs_remove_tree(base, &err), 0, "%s", err.message);
}

/* A TaskManager's RocksDB working folders may lie outside io.tmp.dirs
 * (state.backend.rocksdb.localdir): a daemon's sweep at its start covers
 * them too. */
Test(tmp_dir, the_daemon_sweep_covers_the_rocksdb_local_dir)
{
    char tmp[64], local[64], killed[600];
    struct config *conf = config_new();
    spate_error err = { 0 };
    pid_t k;

    snprintf(tmp, sizeof tmp, "/tmp/spate-tmpdir-test-XXXXXX");
    snprintf(local, sizeof local, "/tmp/spate-tmpdir-test-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
    cr_assert_not_null(mkdtemp(local));
    config_set(conf, "io.tmp.dirs", tmp, "test");
    config_set(conf, "state.backend.rocksdb.localdir", local, "test");
    k = child_with_folder(local, "rocksdb-window_1", killed, sizeof killed);
    cr_assert_eq(tmp_dir_sweep_config(conf), 0, "its TaskManager is alive");
    cr_assert(exists(killed));
    kill(k, SIGKILL);
    waitpid(k, NULL, 0);
    cr_assert_eq(tmp_dir_sweep_config(conf), 1);
    cr_assert_not(exists(killed), "%s was left by a killed TaskManager", killed);
    config_free(conf);
    cr_assert_eq(fs_remove_tree(tmp, &err), 0, "%s", err.message);
    cr_assert_eq(fs_remove_tree(local, &err), 0, "%s", err.message);
}

Test(tmp_dir, a_folder_that_cannot_be_made_is_a_clear_error)
{
    struct tmp_dir d;
    spate_error err = { 0 };

    cr_assert_neq(tmp_dir_make("/nonexistent-spate-base", "blobs", &d, &err), 0);
    cr_assert_null(d.path);
    cr_assert_not_null(strstr(err.message, "/nonexistent-spate-base/spate-blobs-"), "%s",
                       err.message);
    cr_assert_not_null(strstr(err.message, "io.tmp.dirs"), "%s", err.message);
}
