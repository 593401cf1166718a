/* Unit tests of src/core/sha256.c against known digests. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/sha256.h"

Test(sha256, known_digests)
{
    uint8_t d[SHA256_BYTES];
    char hex[SHA256_HEX_LEN + 1];

    sha256("", 0, d);
    cr_assert_str_eq(sha256_hex(d, hex),
                     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256("abc", 3, d);
    cr_assert_str_eq(sha256_hex(d, hex),
                     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

Test(sha256, incremental_equals_one_shot_and_file)
{
    struct sha256_ctx ctx;
    uint8_t a[SHA256_BYTES], b[SHA256_BYTES], c[SHA256_BYTES];
    char path[] = "/tmp/spate-test-sha-XXXXXX";
    int fd = mkstemp(path);
    spate_error err;

    sha256_init(&ctx);
    sha256_update(&ctx, "hello ", 6);
    sha256_update(&ctx, "world", 5);
    sha256_final(&ctx, a);
    sha256("hello world", 11, b);
    cr_assert(sha256_equal(a, b));
    cr_assert_eq(write(fd, "hello world", 11), 11);
    close(fd);
    cr_assert_eq(sha256_file(path, c, &err), 0);
    cr_assert(sha256_equal(a, c));
    unlink(path);
    cr_assert_eq(sha256_file(path, c, &err), SPATE_ENOENT);
    cr_assert(strstr(err.message, "cannot open") != NULL);
    c[0] ^= 1;
    cr_assert(!sha256_equal(a, c));
}
