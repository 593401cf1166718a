/* Bad input against a live rpc_peer: garbage, a truncated frame, an
 * oversized length, frames for an unknown endpoint or method, wrong
 * handshakes. Each must close that one connection with a logged reason
 * while the peer keeps serving a healthy client. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "rpc/frame.h"
#include "rpc/handshake.h"
#include "rpc/service.h"
#include "support/echo.h"
#include "support/peer_proc.h"

static struct rpc_service *svc;
static struct rpc_gateway *healthy;
static struct peer_proc peer;
static char dir[64];

static void
setup(void)
{
    struct rpc_service_options o = { .bind_host = "127.0.0.1", .port = "0" };
    char *argv[] = { RPC_PEER_PATH, "serve", "--handshake-timeout", "300", NULL };
    char log[128], addr[64];

    cr_assert_not_null(mkdtemp(strcpy(dir, "/tmp/spate-bad-XXXXXX")));
    snprintf(log, sizeof log, "%s/peer.log", dir);
    cr_assert_eq(peer_spawn(&peer, argv, log), 0);
    cr_assert_eq(rpc_service_new(&o, &svc, NULL), 0);
    cr_assert_eq(rpc_service_start(svc, NULL), 0);
    snprintf(addr, sizeof addr, "127.0.0.1:%d/echo", peer.port);
    cr_assert_eq(rpc_gateway_new(svc, addr, NULL, &healthy, NULL), 0);
}

static void
teardown(void)
{
    char log[128];

    rpc_gateway_free(healthy);
    rpc_service_free(svc);
    peer_kill(&peer);
    snprintf(log, sizeof log, "%s/peer.log", dir);
    unlink(log);
    rmdir(dir);
}

TestSuite(rpc_badinput, .init = setup, .fini = teardown, .timeout = 60);

/* The healthy client is still served. */
static void
assert_still_serving(void)
{
    Echotest__EchoRequest req = ECHOTEST__ECHO_REQUEST__INIT;
    struct rpc_future *f;
    spate_error err = { 0 };

    req.seq = 99;
    f = echo_echo(healthy, &req, 0);
    cr_assert_eq(rpc_future_wait(f, 20000, &err), 0, "%s", err.message);
    rpc_future_unref(f);
}

static int
raw_connect(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)peer.port) };
    struct timeval tv = { .tv_sec = 20 };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static void
send_all(int fd, const void *p, size_t n)
{
    cr_assert_eq(write(fd, p, n), (ssize_t)n);
}

static void
read_exactly(int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);

        cr_assert_gt(r, 0, "the peer closed or did not answer");
        got += (size_t)r;
    }
}

/* Answers the server's challenge with a hello made by hp; the server's
 * answer to it is left to read. */
static void
hello_as(int fd, const struct handshake_params *hp, uint8_t hello[HANDSHAKE_SIZE])
{
    uint8_t challenge[HANDSHAKE_SIZE];
    struct handshake_nonces n;
    spate_error err;

    read_exactly(fd, challenge, sizeof challenge);
    /* The client's params, but the server's magic and cluster, so that the
     * hello itself carries what is wrong. */
    {
        struct handshake_params server = { HANDSHAKE_MAGIC_RPC, "spate", hp->secret };

        cr_assert_eq(handshake_answer_challenge(&server, challenge, &n, hello, &err), 0, "%s",
                     err.message);
    }
    if (hp->magic != HANDSHAKE_MAGIC_RPC) {
        hello[0] = (uint8_t)(hp->magic >> 24);
        hello[1] = (uint8_t)(hp->magic >> 16);
        hello[2] = (uint8_t)(hp->magic >> 8);
        hello[3] = (uint8_t)hp->magic;
    }
    if (strcmp(hp->cluster_id, "spate") != 0) {
        memset(hello + 8, 0, 64);
        memcpy(hello + 8, hp->cluster_id, strlen(hp->cluster_id));
    }
}

static void
good_hello(int fd)
{
    struct handshake_params hp = { HANDSHAKE_MAGIC_RPC, "spate", NULL };
    uint8_t hello[HANDSHAKE_SIZE];

    hello_as(fd, &hp, hello);
    send_all(fd, hello, sizeof hello);
}

/* Reads until the peer closes; returns the bytes read (at most size). The
 * read timeout turns a connection left open into a failure. */
static size_t
read_to_eof(int fd, uint8_t *buf, size_t size)
{
    size_t got = 0;

    for (;;) {
        ssize_t n = read(fd, buf + got, size - got);

        cr_assert_geq(n, 0, "the peer kept the connection open");
        if (n == 0)
            return got;
        got += (size_t)n;
        cr_assert_lt(got, size);
    }
}

static void
expect_closed(int fd, const char *log_text)
{
    uint8_t buf[8192];

    read_to_eof(fd, buf, sizeof buf);
    close(fd);
    cr_assert(peer_log_contains(&peer, log_text, 10000), "peer log lacks '%s'", log_text);
    assert_still_serving();
}

Test(rpc_badinput, garbage_instead_of_a_handshake)
{
    uint8_t junk[HANDSHAKE_SIZE];
    int fd = raw_connect();

    memset(junk, 0x5a, sizeof junk);
    send_all(fd, junk, sizeof junk);
    expect_closed(fd, "bad handshake magic");
}

Test(rpc_badinput, no_handshake_in_time)
{
    int fd = raw_connect();

    send_all(fd, "SPRC", 4); /* the start of a hello, and then nothing */
    expect_closed(fd, "no handshake within 300 ms (4 bytes came)");
}

Test(rpc_badinput, wrong_cluster_id_and_version)
{
    struct handshake_params hp = { HANDSHAKE_MAGIC_RPC, "another-cluster", NULL };
    uint8_t hello[HANDSHAKE_SIZE];
    int fd = raw_connect();

    hello_as(fd, &hp, hello);
    send_all(fd, hello, sizeof hello);
    expect_closed(fd, "cluster id 'another-cluster'");

    hp.cluster_id = "spate";
    fd = raw_connect();
    hello_as(fd, &hp, hello);
    hello[5] = 9; /* protocol version 9 */
    send_all(fd, hello, sizeof hello);
    expect_closed(fd, "protocol version 9 is not supported");
}

Test(rpc_badinput, data_handshake_on_the_rpc_port)
{
    struct handshake_params hp = { HANDSHAKE_MAGIC_DATA, "spate", NULL };
    uint8_t hello[HANDSHAKE_SIZE];
    int fd = raw_connect();

    hello_as(fd, &hp, hello);
    send_all(fd, hello, sizeof hello);
    expect_closed(fd, "not a spate RPC connection");
}

Test(rpc_badinput, garbage_frame)
{
    uint8_t junk[64];
    int fd = raw_connect();

    good_hello(fd);
    memset(junk, 0x00, sizeof junk);
    junk[3] = 40;
    junk[4] = 7; /* version 7 */
    send_all(fd, junk, sizeof junk);
    expect_closed(fd, "frame protocol version 7");
}

Test(rpc_badinput, truncated_frame)
{
    uint8_t frame[128];
    int fd = raw_connect();

    good_hello(fd);
    frame_encode_header(frame, FRAME_TELL, 0x6402, 0, NULL, "echo", 4, 60);
    send_all(fd, frame, FRAME_HEADER_BYTES + 4 + 10);
    shutdown(fd, SHUT_WR);
    expect_closed(fd, "in a truncated frame");
}

Test(rpc_badinput, oversized_length)
{
    uint8_t len[4] = { 0x7f, 0xff, 0xff, 0xff };
    int fd = raw_connect();

    good_hello(fd);
    send_all(fd, len, sizeof len);
    expect_closed(fd, "exceeds rpc.max-frame-size");
}

/* A well-formed ask for target/method; returns the error code it got back. */
static int
ask_raw(int fd, const char *target, uint16_t method, uint8_t *buf, size_t size)
{
    uint8_t frame[128];
    struct frame fr;
    char msg[512];
    int code = 0;
    size_t got;

    frame_encode_header(frame, FRAME_ASK, method, 5, NULL, target, strlen(target), 0);
    send_all(fd, frame, FRAME_HEADER_BYTES + strlen(target));
    got = read_to_eof(fd, buf, size);
    cr_assert_geq(got, HANDSHAKE_SIZE); /* the reply (good_hello read the challenge) */
    cr_assert_eq(frame_decode(buf + HANDSHAKE_SIZE, got - HANDSHAKE_SIZE, 1 << 20, &fr, NULL), 1,
                 "no error reply before the close");
    cr_assert_eq(fr.type, FRAME_ERROR);
    cr_assert_eq(fr.call_id, 5);
    cr_assert_eq(frame_decode_error(fr.payload, fr.payload_len, &code, msg, sizeof msg, NULL), 0);
    return code;
}

Test(rpc_badinput, unknown_endpoint)
{
    uint8_t buf[8192];
    int fd = raw_connect();

    good_hello(fd);
    cr_assert_eq(ask_raw(fd, "nosuch", 0x6401, buf, sizeof buf), SPATE_ENOENDPOINT);
    expect_closed(fd, "unknown endpoint 'nosuch'");
}

Test(rpc_badinput, unknown_method)
{
    uint8_t buf[8192];
    int fd = raw_connect();

    good_hello(fd);
    cr_assert_eq(ask_raw(fd, "echo", 0x6455, buf, sizeof buf), SPATE_ENOMETHOD);
    expect_closed(fd, "has no ask method 0x6455");
}

Test(rpc_badinput, undecodable_payload)
{
    uint8_t frame[128];
    int fd = raw_connect();

    good_hello(fd);
    frame_encode_header(frame, FRAME_TELL, 0x6402, 0, NULL, "echo", 4, 3);
    memcpy(frame + FRAME_HEADER_BYTES + 4, "\x0a\x7f\x01", 3); /* field 1, 127 bytes, 1 there */
    send_all(fd, frame, FRAME_HEADER_BYTES + 4 + 3);
    expect_closed(fd, "undecodable echo.count request");
}
