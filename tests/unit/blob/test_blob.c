/* The BlobServer and BlobCache: a stored file is fetched byte for byte over
 * the port, unknown keys and wrong secrets are refused with a reason, the
 * size limit holds on both sides, the last reference removes the file. The
 * HA blob store: a second server (the next leader) restores a job's blob
 * from it at the first fetch; a corrupt or missing copy is a refusal
 * naming the file; the job's clean-up removes its folder.
 * No per-test .timeout: with several such tests ending together Criterion's
 * runner leaks (LeakSanitizer fails asan/); ctest bounds the program. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blob/blob_cache.h"
#include "blob/blob_server.h"
#include "core/alloc.h"

static char dir[64];

static void
setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/spate-blob-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static char *
write_file(const char *name, size_t size, unsigned seed)
{
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f);
    for (size_t i = 0; i < size; i++)
        fputc((int)((i * 31 + seed) & 0xff), f);
    fclose(f);
    return path;
}

static struct blob_server *
start_ha(int64_t max, const char *secret, const char *ha_dir)
{
    struct blob_server_options o = { .storage_dir = dir,
                                     .bind_host = "127.0.0.1",
                                     .port = "0",
                                     .advertised_host = "127.0.0.1",
                                     .max_size_bytes = max,
                                     .secret = secret,
                                     .ha_dir = ha_dir };
    struct blob_server *bs = NULL;
    spate_error err = { 0 };

    cr_assert_eq(blob_server_start(&o, &bs, &err), 0, "%s", err.message);
    return bs;
}

static struct blob_server *
start(int64_t max, const char *secret)
{
    return start_ha(max, secret, NULL);
}

Test(blob, put_fetch_release)
{
    struct blob_server *bs;
    char *src, *cache_dir;
    struct blob_cache *c;
    uint8_t key[SHA256_BYTES], again[SHA256_BYTES], digest[SHA256_BYTES];
    const char *path = NULL, *path2 = NULL;
    spate_error err = { 0 };
    struct stat st;

    setup();
    bs = start(1 << 24, "s3cret");
    src = write_file("lib.so", 300000, 7);
    cache_dir = xasprintf("%s/cache", dir);
    c = blob_cache_new(cache_dir, "s3cret", NULL, 1 << 24);
    cr_assert_eq(blob_server_put_file(bs, src, false, key, &err), 0, "%s", err.message);
    cr_assert_eq(sha256_file(src, digest, NULL), 0);
    cr_assert(sha256_equal(key, digest));
    cr_assert_eq(stat(src, &st), 0, "a copy leaves the original");
    /* The same bytes again: one blob, two references. */
    cr_assert_eq(blob_server_put_file(bs, src, true, again, &err), 0, "%s", err.message);
    cr_assert(sha256_equal(key, again));
    cr_assert_neq(stat(src, &st), 0, "a move takes the original");
    cr_assert_eq(blob_server_count(bs), 1);

    cr_assert_eq(blob_cache_get(c, blob_server_address(bs), key, &path, &err), 0, "%s",
                 err.message);
    cr_assert_eq(sha256_file(path, digest, NULL), 0);
    cr_assert(sha256_equal(key, digest));
    /* A second user shares the copy. */
    cr_assert_eq(blob_cache_get(c, blob_server_address(bs), key, &path2, &err), 0);
    cr_assert_str_eq(path, path2);
    blob_cache_release(c, key);
    cr_assert_eq(stat(path, &st), 0);
    {
        char *kept = xstrdup(path);

        blob_cache_release(c, key);
        cr_assert_neq(stat(kept, &st), 0, "the last release removes the copy");
        free(kept);
    }

    blob_server_unref(bs, key);
    cr_assert_eq(blob_server_count(bs), 1);
    blob_server_unref(bs, key);
    cr_assert_eq(blob_server_count(bs), 0);
    cr_assert_eq(blob_server_ref(bs, key, &err), SPATE_ENOENT);
    cr_assert(strstr(err.message, "has no blob") != NULL, "%s", err.message);
    blob_cache_free(c);
    blob_server_stop(bs);
    free(src);
    free(cache_dir);
    teardown();
}

Test(blob, refusals_are_clear)
{
    struct blob_server *bs;
    char *small, *big, *cache_dir;
    struct blob_cache *wrong, *tiny;
    uint8_t key[SHA256_BYTES], unknown[SHA256_BYTES] = { 1, 2, 3 };
    const char *path;
    spate_error err = { 0 };

    setup();
    bs = start(1000, "right");
    small = write_file("small", 500, 1);
    big = write_file("big", 5000, 2);
    cache_dir = xasprintf("%s/cache", dir);
    wrong = blob_cache_new(cache_dir, "wrong", NULL, 1 << 20);
    tiny = blob_cache_new(cache_dir, "right", NULL, 100);

    cr_assert_eq(blob_server_put_file(bs, big, false, key, &err), SPATE_EMSGSIZE);
    cr_assert(strstr(err.message, "blob.max-size") != NULL, "%s", err.message);
    cr_assert_eq(blob_server_count(bs), 0);
    cr_assert_eq(blob_server_put_file(bs, small, false, key, &err), 0, "%s", err.message);

    cr_assert_neq(blob_cache_get(wrong, blob_server_address(bs), key, &path, &err), 0);
    cr_assert(strstr(err.message, "wrong secret") != NULL, "%s", err.message);
    cr_assert_eq(blob_cache_get(tiny, blob_server_address(bs), unknown, &path, &err), SPATE_ENOENT);
    cr_assert(strstr(err.message, "is not stored") != NULL, "%s", err.message);
    cr_assert_eq(blob_cache_get(tiny, blob_server_address(bs), key, &path, &err), SPATE_EMSGSIZE);
    cr_assert(strstr(err.message, "more than blob.max-size") != NULL, "%s", err.message);
    cr_assert_neq(blob_cache_get(tiny, "127.0.0.1:1", key, &path, &err), 0);
    cr_assert(strstr(err.message, "cannot connect to the BlobServer") != NULL, "%s", err.message);

    blob_cache_free(wrong);
    blob_cache_free(tiny);
    blob_server_unref(bs, key);
    blob_server_stop(bs);
    free(small);
    free(big);
    free(cache_dir);
    teardown();
}

/* Task threads of one job fetch together: one download, one shared copy,
 * removed with the last release (TSan checks the locking). */
struct fetcher {
    struct blob_cache *c;
    const char *server;
    const uint8_t *key;
    const char *path;
    int rc;
};

static void *
fetch(void *arg)
{
    struct fetcher *f = arg;
    spate_error err = { 0 };

    f->rc = blob_cache_get(f->c, f->server, f->key, &f->path, &err);
    return NULL;
}

Test(blob, concurrent_fetches_share_one_copy)
{
    struct blob_server *bs;
    struct blob_cache *c;
    struct fetcher f[8];
    pthread_t t[8];
    uint8_t key[SHA256_BYTES];
    spate_error err = { 0 };
    char *src, *cache_dir;
    struct stat st;

    setup();
    bs = start(1 << 24, NULL);
    src = write_file("lib.so", 1 << 20, 3);
    cache_dir = xasprintf("%s/cache", dir);
    c = blob_cache_new(cache_dir, NULL, NULL, 1 << 24);
    cr_assert_eq(blob_server_put_file(bs, src, false, key, &err), 0, "%s", err.message);
    for (int i = 0; i < 8; i++) {
        f[i] = (struct fetcher){ c, blob_server_address(bs), key, NULL, -1 };
        pthread_create(&t[i], NULL, fetch, &f[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(f[i].rc, 0);
        cr_assert_str_eq(f[i].path, f[0].path);
    }
    {
        char *kept = xstrdup(f[0].path);

        for (int i = 0; i < 8; i++) {
            cr_assert_eq(stat(kept, &st), 0);
            blob_cache_release(c, key);
        }
        cr_assert_neq(stat(kept, &st), 0);
        free(kept);
    }
    blob_cache_free(c);
    blob_server_unref(bs, key);
    blob_server_stop(bs);
    free(src);
    free(cache_dir);
    teardown();
}

/* Leader 1 keeps the job's blob in the HA blob store; leader 2 (another
 * BlobServer, which never saw the upload) serves it to a cache after
 * restoring it; a damaged or missing copy is a refusal naming the file;
 * the clean-up removes the job's folder. */
Test(blob, ha_blob_store_serves_a_recovered_job_on_the_next_leader)
{
    struct blob_server *first, *next;
    struct blob_cache *c;
    uint8_t key[SHA256_BYTES], digest[SHA256_BYTES];
    char *src, *cache_dir, *ha_dir, *copy, *folder, hex[SHA256_HEX_LEN + 1];
    spate_id job, other;
    const char *path = NULL;
    spate_error err = { 0 };
    struct stat st;
    FILE *f;

    setup();
    ha_dir = xasprintf("%s/ha/blob", dir);
    first = start_ha(1 << 24, NULL, ha_dir);
    src = write_file("lib.so", 200000, 5);
    cache_dir = xasprintf("%s/cache", dir);
    c = blob_cache_new(cache_dir, NULL, NULL, 1 << 24);
    id_random(&job);
    id_random(&other);
    cr_assert_eq(blob_server_put_file(first, src, false, key, &err), 0, "%s", err.message);
    cr_assert_eq(blob_server_persist_job_blob(first, &job, key, &err), 0, "%s", err.message);
    copy = xasprintf("%s/job_%s/blob_p-%s", ha_dir, id_str(&job).s, sha256_hex(key, hex));
    cr_assert_eq(sha256_file(copy, digest, NULL), 0, "Flink's layout: %s", copy);
    cr_assert(sha256_equal(key, digest));
    blob_server_stop(first); /* the leader dies: its own folder goes */

    next = start_ha(1 << 24, NULL, ha_dir);
    /* Without an HA copy for that job, nothing to restore from. */
    cr_assert_eq(blob_server_ref_job(next, &other, key, &err), 0, "%s", err.message);
    cr_assert_not(blob_server_has_file(next, key));
    cr_assert_eq(blob_cache_get(c, blob_server_address(next), key, &path, &err), SPATE_ENOENT);
    cr_assert(strstr(err.message, "its copy in the HA blob store is unusable") != NULL &&
                  strstr(err.message, id_str(&other).s) != NULL &&
                  strstr(err.message, "no such file") != NULL,
              "%s", err.message);
    blob_server_unref(next, key);
    cr_assert_eq(blob_server_count(next), 0);

    /* The recovered job: restored at its first fetch, verified. */
    cr_assert_eq(blob_server_ref_job(next, &job, key, &err), 0, "%s", err.message);
    cr_assert_not(blob_server_has_file(next, key));
    cr_assert_eq(blob_cache_get(c, blob_server_address(next), key, &path, &err), 0, "%s",
                 err.message);
    cr_assert_eq(sha256_file(path, digest, NULL), 0);
    cr_assert(sha256_equal(key, digest));
    cr_assert(blob_server_has_file(next, key));
    blob_cache_release(c, key);
    blob_server_unref(next, key);

    /* A damaged copy is refused with its path and the hash it has; the
     * server stays up and serves it once the copy is whole again. */
    f = fopen(copy, "r+");
    cr_assert_not_null(f);
    fputs("garbage", f);
    fclose(f);
    cr_assert_eq(blob_server_ref_job(next, &job, key, &err), 0, "%s", err.message);
    cr_assert_neq(blob_cache_get(c, blob_server_address(next), key, &path, &err), 0);
    cr_assert(strstr(err.message, copy) != NULL && strstr(err.message, "is corrupt") != NULL, "%s",
              err.message);
    cr_assert_not(blob_server_has_file(next, key));
    cr_assert_eq(blob_server_put_file(next, src, false, digest, &err), 0, "%s", err.message);
    cr_assert(blob_server_has_file(next, key), "an upload of the same bytes brings the file");
    cr_assert_eq(blob_cache_get(c, blob_server_address(next), key, &path, &err), 0, "%s",
                 err.message);
    blob_cache_release(c, key);

    /* The job's global clean-up removes its folder. */
    folder = xasprintf("%s/job_%s", ha_dir, id_str(&job).s);
    cr_assert_eq(stat(folder, &st), 0);
    cr_assert_eq(blob_server_cleanup_job(next, &job, &err), 0, "%s", err.message);
    cr_assert_neq(stat(folder, &st), 0);
    cr_assert_eq(blob_server_cleanup_job(next, &job, &err), 0, "a missing folder is fine");
    /* Without an HA blob store, an unknown key stays an error. */
    first = start(1 << 24, NULL);
    cr_assert_eq(blob_server_ref_job(first, &job, key, &err), SPATE_ENOENT);
    cr_assert_eq(blob_server_persist_job_blob(first, &job, key, &err), 0, "nothing to do");
    blob_server_stop(first);

    blob_server_unref(next, key);
    blob_server_unref(next, key);
    cr_assert_eq(blob_server_count(next), 0);
    blob_cache_free(c);
    blob_server_stop(next);
    free(src);
    free(cache_dir);
    free(ha_dir);
    free(copy);
    free(folder);
    teardown();
}
