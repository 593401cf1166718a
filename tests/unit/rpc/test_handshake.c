/* Unit tests of src/rpc/handshake.c: accept, and each refusal with its reason. */
#include <criterion/criterion.h>
#include <string.h>

#include "rpc/handshake.h"

static const struct handshake_params plain = { HANDSHAKE_MAGIC_RPC, "/default", NULL };

Test(handshake, matching_peers_accept)
{
    uint8_t hello[HANDSHAKE_SIZE], reply[HANDSHAKE_SIZE];
    enum handshake_status st;
    spate_error err;

    handshake_encode_hello(&plain, hello);
    cr_assert_eq(handshake_check_hello(&plain, hello, &st, &err), 0);
    cr_assert_eq(st, HANDSHAKE_OK);
    handshake_encode_reply(&plain, HANDSHAKE_OK, NULL, reply);
    cr_assert_eq(handshake_check_reply(&plain, reply, &err), 0);
}

Test(handshake, secrets_must_match)
{
    struct handshake_params a = { HANDSHAKE_MAGIC_RPC, "c1", "s3cret" };
    struct handshake_params b = { HANDSHAKE_MAGIC_RPC, "c1", "other" };
    uint8_t hello[HANDSHAKE_SIZE];
    enum handshake_status st;
    spate_error err;

    handshake_encode_hello(&a, hello);
    cr_assert_eq(handshake_check_hello(&a, hello, &st, &err), 0);
    cr_assert_eq(handshake_check_hello(&b, hello, &st, &err), SPATE_EPROTO);
    cr_assert_eq(st, HANDSHAKE_BAD_SECRET);
    cr_assert(strstr(err.message, "does not match security.rpc.secret") != NULL);
    /* A client without a secret, a server with one. */
    b.secret = NULL;
    b.cluster_id = "c1";
    handshake_encode_hello(&b, hello);
    cr_assert_eq(handshake_check_hello(&a, hello, &st, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "presented no shared secret") != NULL);
}

Test(handshake, wrong_magic_version_cluster)
{
    struct handshake_params data = { HANDSHAKE_MAGIC_DATA, "/default", NULL };
    struct handshake_params other = { HANDSHAKE_MAGIC_RPC, "/elsewhere", NULL };
    uint8_t hello[HANDSHAKE_SIZE];
    enum handshake_status st;
    spate_error err;

    handshake_encode_hello(&data, hello);
    cr_assert_eq(handshake_check_hello(&plain, hello, &st, &err), SPATE_EPROTO);
    cr_assert_eq(st, HANDSHAKE_BAD_MAGIC);
    cr_assert(strstr(err.message, "not a spate RPC connection") != NULL, "%s", err.message);

    handshake_encode_hello(&plain, hello);
    hello[5] = 9;
    cr_assert_eq(handshake_check_hello(&plain, hello, &st, &err), SPATE_EPROTO);
    cr_assert_eq(st, HANDSHAKE_BAD_VERSION);
    cr_assert(strstr(err.message, "version 9") != NULL);

    handshake_encode_hello(&other, hello);
    cr_assert_eq(handshake_check_hello(&plain, hello, &st, &err), SPATE_EPROTO);
    cr_assert_eq(st, HANDSHAKE_BAD_CLUSTER);
    cr_assert(strstr(err.message, "'/elsewhere'") != NULL);
}

Test(handshake, garbage_is_refused_not_crashed)
{
    uint8_t junk[HANDSHAKE_SIZE];
    enum handshake_status st;
    spate_error err;

    memset(junk, 0xff, sizeof junk);
    cr_assert_eq(handshake_check_hello(&plain, junk, &st, &err), SPATE_EPROTO);
    memcpy(junk, "GET / HTTP/1.1\r\n", 16);
    cr_assert_eq(handshake_check_hello(&plain, junk, &st, &err), SPATE_EPROTO);
    /* Right magic and version, a cluster id with no terminator. */
    handshake_encode_hello(&plain, junk);
    memset(junk + 8, 'x', 64);
    cr_assert_eq(handshake_check_hello(&plain, junk, &st, &err), SPATE_EPROTO);
    cr_assert_eq(st, HANDSHAKE_BAD_CLUSTER);
}

Test(handshake, refusal_reaches_the_client_with_its_reason)
{
    uint8_t reply[HANDSHAKE_SIZE];
    spate_error err;

    handshake_encode_reply(&plain, HANDSHAKE_BAD_CLUSTER, "cluster id 'x' is not this cluster's",
                           reply);
    cr_assert_eq(handshake_check_reply(&plain, reply, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "refused by the server: cluster id 'x'") != NULL, "%s",
              err.message);
}
