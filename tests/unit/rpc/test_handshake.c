/* The connection handshake: the challenge-response with nonces from both
 * sides, what it refuses and why, and that a captured one cannot be replayed. */
#include <criterion/criterion.h>
#include <string.h>

#include "rpc/handshake.h"

static const struct handshake_params plain = { HANDSHAKE_MAGIC_RPC, "/default", NULL };

/* A whole handshake between client params c and server params s: the
 * client's and the server's verdicts, and the messages if wanted. */
struct run {
    uint8_t challenge[HANDSHAKE_SIZE], hello[HANDSHAKE_SIZE], reply[HANDSHAKE_SIZE];
    struct handshake_nonces cn, sn;
    enum handshake_status st;
    int server_rc, client_rc;
    spate_error serr, cerr;
};

static void
run_handshake(const struct handshake_params *c, const struct handshake_params *s, struct run *r)
{
    memset(r, 0, sizeof *r);
    handshake_encode_challenge(s, &r->sn, HANDSHAKE_OK, NULL, r->challenge);
    cr_assert_eq(handshake_answer_challenge(c, r->challenge, &r->cn, r->hello, &r->cerr), 0, "%s",
                 r->cerr.message);
    r->server_rc = handshake_check_hello(s, &r->sn, r->hello, &r->st, &r->serr);
    handshake_encode_reply(s, &r->sn, r->server_rc == 0 ? HANDSHAKE_OK : r->st,
                           r->server_rc == 0 ? NULL : r->serr.message, r->reply);
    r->client_rc = handshake_check_reply(c, &r->cn, r->reply, &r->cerr);
}

Test(handshake, accepts_matching_sides)
{
    struct handshake_params sec = { HANDSHAKE_MAGIC_RPC, "c1", "s3cret" };
    struct run r;

    run_handshake(&plain, &plain, &r);
    cr_assert_eq(r.server_rc, 0, "%s", r.serr.message);
    cr_assert_eq(r.client_rc, 0, "%s", r.cerr.message);
    run_handshake(&sec, &sec, &r);
    cr_assert_eq(r.server_rc, 0, "%s", r.serr.message);
    cr_assert_eq(r.client_rc, 0, "%s", r.cerr.message);
    /* Nonces from both sides, fresh each time. */
    cr_assert(memcmp(r.sn.server, r.cn.server, HANDSHAKE_NONCE_BYTES) == 0);
    cr_assert(memcmp(r.sn.client, r.cn.client, HANDSHAKE_NONCE_BYTES) == 0);
    cr_assert(memcmp(r.sn.server, r.sn.client, HANDSHAKE_NONCE_BYTES) != 0);
}

Test(handshake, the_secret_never_travels)
{
    struct handshake_params sec = { HANDSHAKE_MAGIC_RPC, "c1", "s3cret-value" };
    struct run r;

    run_handshake(&sec, &sec, &r);
    cr_assert_null(memmem(r.challenge, HANDSHAKE_SIZE, "s3cret", 6));
    cr_assert_null(memmem(r.hello, HANDSHAKE_SIZE, "s3cret", 6));
    cr_assert_null(memmem(r.reply, HANDSHAKE_SIZE, "s3cret", 6));
}

Test(handshake, secrets_must_match)
{
    struct handshake_params a = { HANDSHAKE_MAGIC_RPC, "c1", "s3cret" };
    struct handshake_params b = { HANDSHAKE_MAGIC_RPC, "c1", "other" };
    struct run r;

    run_handshake(&b, &a, &r);
    cr_assert_eq(r.server_rc, SPATE_EPROTO);
    cr_assert_eq(r.st, HANDSHAKE_BAD_SECRET);
    cr_assert(strstr(r.serr.message, "does not match security.rpc.secret") != NULL, "%s",
              r.serr.message);
    cr_assert_eq(r.client_rc, SPATE_EPROTO);
    cr_assert(strstr(r.cerr.message, "refused by the server") != NULL, "%s", r.cerr.message);
    /* A client without a secret, a server with one. */
    b.secret = NULL;
    run_handshake(&b, &a, &r);
    cr_assert_eq(r.server_rc, SPATE_EPROTO);
    cr_assert(strstr(r.serr.message, "presented no proof") != NULL, "%s", r.serr.message);
    /* A client with a secret, a server without: both sides disagree. */
    run_handshake(&a, &b, &r);
    cr_assert_eq(r.server_rc, SPATE_EPROTO);
    cr_assert(strstr(r.serr.message, "not set here") != NULL, "%s", r.serr.message);
}

/* An attacker who recorded a whole good handshake replays the client's hello
 * on a new connection: the server's nonce differs, the proof fails. */
Test(handshake, a_replayed_hello_is_refused)
{
    struct handshake_params sec = { HANDSHAKE_MAGIC_RPC, "c1", "s3cret" };
    uint8_t challenge[HANDSHAKE_SIZE];
    struct handshake_nonces n;
    enum handshake_status st;
    spate_error err;
    struct run r;

    run_handshake(&sec, &sec, &r);
    cr_assert_eq(r.server_rc, 0);
    handshake_encode_challenge(&sec, &n, HANDSHAKE_OK, NULL, challenge);
    cr_assert_eq(handshake_check_hello(&sec, &n, r.hello, &st, &err), SPATE_EPROTO);
    cr_assert_eq(st, HANDSHAKE_BAD_SECRET);
    cr_assert(strstr(err.message, "replayed") != NULL, "%s", err.message);
}

/* A fake server replays a recorded reply to a client: the client's nonce
 * differs, the server's proof fails; and a client's own proof reflected back
 * as the server's is refused (the labels differ). */
Test(handshake, a_replayed_or_reflected_reply_is_refused)
{
    struct handshake_params sec = { HANDSHAKE_MAGIC_RPC, "c1", "s3cret" };
    uint8_t hello[HANDSHAKE_SIZE], reflected[HANDSHAKE_SIZE];
    struct handshake_nonces n;
    spate_error err;
    struct run r;

    run_handshake(&sec, &sec, &r);
    cr_assert_eq(r.client_rc, 0);
    cr_assert_eq(handshake_answer_challenge(&sec, r.challenge, &n, hello, &err), 0);
    cr_assert_eq(handshake_check_reply(&sec, &n, r.reply, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "server's handshake reply") != NULL, "%s", err.message);
    memcpy(reflected, hello, sizeof reflected);
    cr_assert_eq(handshake_check_reply(&sec, &n, reflected, &err), SPATE_EPROTO);
}

Test(handshake, wrong_magic_version_cluster)
{
    struct handshake_params data = { HANDSHAKE_MAGIC_DATA, "/default", NULL };
    struct handshake_params other = { HANDSHAKE_MAGIC_RPC, "/elsewhere", NULL };
    uint8_t challenge[HANDSHAKE_SIZE], hello[HANDSHAKE_SIZE];
    struct handshake_nonces n;
    enum handshake_status st;
    spate_error err;

    handshake_encode_challenge(&plain, &n, HANDSHAKE_OK, NULL, challenge);
    cr_assert_eq(handshake_answer_challenge(&data, challenge, &n, hello, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "not a spate data connection") != NULL, "%s", err.message);

    cr_assert_eq(handshake_answer_challenge(&plain, challenge, &n, hello, &err), 0);
    hello[5] = 9;
    cr_assert_eq(handshake_check_hello(&plain, &n, hello, &st, &err), SPATE_EPROTO);
    cr_assert_eq(st, HANDSHAKE_BAD_VERSION);
    cr_assert(strstr(err.message, "version 9") != NULL);

    handshake_encode_challenge(&other, &n, HANDSHAKE_OK, NULL, challenge);
    cr_assert_eq(handshake_answer_challenge(&other, challenge, &n, hello, &err), 0);
    cr_assert_eq(handshake_check_hello(&plain, &n, hello, &st, &err), SPATE_EPROTO);
    cr_assert_eq(st, HANDSHAKE_BAD_CLUSTER);
    cr_assert(strstr(err.message, "'/elsewhere'") != NULL);
}

Test(handshake, garbage_is_refused_not_crashed)
{
    uint8_t junk[HANDSHAKE_SIZE], hello[HANDSHAKE_SIZE];
    struct handshake_nonces n;
    enum handshake_status st;
    spate_error err;

    memset(junk, 0xff, sizeof junk);
    cr_assert_eq(handshake_check_hello(&plain, &n, junk, &st, &err), SPATE_EPROTO);
    cr_assert_eq(handshake_answer_challenge(&plain, junk, &n, hello, &err), SPATE_EPROTO);
    cr_assert_eq(handshake_check_reply(&plain, &n, junk, &err), SPATE_EPROTO);
    memcpy(junk, "GET / HTTP/1.1\r\n", 16);
    cr_assert_eq(handshake_check_hello(&plain, &n, junk, &st, &err), SPATE_EPROTO);
    /* Right magic and version, a cluster id with no terminator. */
    handshake_encode_challenge(&plain, &n, HANDSHAKE_OK, NULL, junk);
    memset(junk + 8, 'x', 64);
    cr_assert_eq(handshake_check_hello(&plain, &n, junk, &st, &err), SPATE_EPROTO);
    cr_assert_eq(st, HANDSHAKE_BAD_CLUSTER);
}

Test(handshake, refusals_reach_the_client_with_their_reason)
{
    uint8_t msg[HANDSHAKE_SIZE], hello[HANDSHAKE_SIZE];
    struct handshake_nonces n;
    spate_error err;

    memset(&n, 0, sizeof n);
    handshake_encode_reply(&plain, &n, HANDSHAKE_BAD_CLUSTER,
                           "cluster id 'x' is not this cluster's", msg);
    cr_assert_eq(handshake_check_reply(&plain, &n, msg, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "refused by the server: cluster id 'x'") != NULL, "%s",
              err.message);
    handshake_encode_challenge(&plain, &n, HANDSHAKE_BUSY, "busy: 64 connections", msg);
    cr_assert_eq(handshake_answer_challenge(&plain, msg, &n, hello, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "refused by the server: busy: 64") != NULL, "%s", err.message);
}
