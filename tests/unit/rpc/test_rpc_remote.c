/* RPC between two real processes: this test process (a client service on
 * its own loop thread, asking from test threads) and tests/bin/rpc_peer.
 * Outcomes are asserted, never how fast they came. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "rpc/heartbeat.h"
#include "rpc/rpc_int.h"
#include "rpc/service.h"
#include "support/echo.h"
#include "support/peer_proc.h"

#define WAIT_MS 20000 /* a bound for what must happen, never expected to pass */

static struct rpc_service *svc;
static struct peer_proc peer;
static char logdir[64];

static void
client_start(void)
{
    struct rpc_service_options o = { .bind_host = "127.0.0.1", .port = "0" };
    spate_error err = { 0 };

    cr_assert_eq(rpc_service_new(&o, &svc, &err), 0, "%s", err.message);
    cr_assert_eq(rpc_service_start(svc, &err), 0, "%s", err.message);
}

static void
peer_start(const char *port, const char *token)
{
    char *argv[8] = { RPC_PEER_PATH, "serve", "--port", (char *)port, NULL };
    char log[128];

    if (token != NULL) {
        argv[4] = "--token";
        argv[5] = (char *)token;
    }
    if (logdir[0] == '\0')
        cr_assert_not_null(mkdtemp(strcpy(logdir, "/tmp/spate-rpc-XXXXXX")));
    snprintf(log, sizeof log, "%s/peer.log", logdir);
    cr_assert_eq(peer_spawn(&peer, argv, log), 0, "rpc_peer did not start");
}

static void
teardown(void)
{
    peer_kill(&peer);
    rpc_service_free(svc);
    svc = NULL;
}

static struct rpc_gateway *
gw_to(const char *endpoint, const spate_id *token)
{
    char addr[128];
    struct rpc_gateway *gw;

    snprintf(addr, sizeof addr, "127.0.0.1:%d/%s", peer.port, endpoint);
    cr_assert_eq(rpc_gateway_new(svc, addr, token, &gw, NULL), 0);
    return gw;
}

/* One echo ask from this thread; returns the future's code. */
static int
echo_once(struct rpc_gateway *gw, uint64_t seq, uint32_t delay_ms, int64_t timeout_ms,
          spate_error *err)
{
    Echotest__EchoRequest req = ECHOTEST__ECHO_REQUEST__INIT;
    char data[32];
    struct rpc_future *f;
    int rc;

    snprintf(data, sizeof data, "hello %llu", (unsigned long long)seq);
    req.data.data = (uint8_t *)data;
    req.data.len = strlen(data);
    req.seq = seq;
    req.delay_ms = delay_ms;
    f = echo_echo(gw, &req, timeout_ms);
    rc = rpc_future_wait(f, WAIT_MS, err);
    if (rc == 0) {
        Echotest__EchoReply *r = rpc_future_value(f);

        cr_assert_eq(r->seq, seq);
        cr_assert_eq(r->data.len, strlen(data));
        cr_assert_eq(memcmp(r->data.data, data, r->data.len), 0);
    }
    rpc_future_unref(f);
    return rc;
}

TestSuite(rpc_remote, .fini = teardown, .timeout = 60);

Test(rpc_remote, ask_and_tell)
{
    Echotest__Count c = ECHOTEST__COUNT__INIT;
    Echotest__Empty e = ECHOTEST__EMPTY__INIT;
    spate_error err = { 0 };
    struct rpc_gateway *gw;
    struct rpc_future *f;
    Echotest__Stats *s;

    client_start();
    peer_start("0", NULL);
    gw = gw_to("echo", NULL);
    cr_assert_eq(echo_once(gw, 7, 0, 0, &err), 0, "%s", err.message);
    c.n = 1;
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(echo_count(gw, &c, &err), 0);
    /* Frames on one connection arrive in order: the tells are counted first. */
    f = echo_stats(gw, &e, 0);
    cr_assert_eq(rpc_future_wait(f, WAIT_MS, &err), 0, "%s", err.message);
    s = rpc_future_value(f);
    cr_assert_eq(s->tells, 1000);
    cr_assert_eq(s->asks, 1);
    rpc_future_unref(f);
    rpc_gateway_free(gw);
}

Test(rpc_remote, ask_timeout_says_timeout)
{
    spate_error err = { 0 };
    struct rpc_gateway *gw;

    client_start();
    peer_start("0", NULL);
    gw = gw_to("echo", NULL);
    /* The peer answers after 3 s; the ask gives up after 200 ms. */
    cr_assert_eq(echo_once(gw, 1, 3000, 200, &err), SPATE_ETIMEDOUT, "%s", err.message);
    cr_assert(strstr(err.message, "timed out after 200 ms") != NULL, "%s", err.message);
    /* The connection is fine afterwards. */
    cr_assert_eq(echo_once(gw, 2, 0, 0, &err), 0, "%s", err.message);
    rpc_gateway_free(gw);
}

struct thread_arg {
    struct rpc_gateway *gw;
    int id;
    int ok;
};

static void *
asker(void *p)
{
    struct thread_arg *a = p;
    spate_error err = { 0 };

    for (int i = 0; i < 200; i++)
        if (echo_once(a->gw, (uint64_t)a->id * 1000 + (uint64_t)i, 0, 0, &err) == 0)
            a->ok++;
    return NULL;
}

Test(rpc_remote, asks_from_many_threads)
{
    pthread_t t[8];
    struct thread_arg a[8];
    struct rpc_gateway *gw;

    client_start();
    peer_start("0", NULL);
    gw = gw_to("echo", NULL);
    for (int i = 0; i < 8; i++) {
        a[i] = (struct thread_arg){ .gw = gw, .id = i };
        pthread_create(&t[i], NULL, asker, &a[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(a[i].ok, 200, "thread %d: %d of 200 asks succeeded", i, a[i].ok);
    }
    rpc_gateway_free(gw);
}

Test(rpc_remote, fencing_token_rejected)
{
    spate_id good, bad;
    char hex[33];
    spate_error err = { 0 };
    struct rpc_gateway *g_good, *g_bad, *g_none;
    Echotest__EchoRequest req = ECHOTEST__ECHO_REQUEST__INIT;
    struct rpc_future *f;

    id_random(&good);
    id_random(&bad);
    client_start();
    peer_start("0", id_format(&good, hex));
    g_good = gw_to("fenced", &good);
    g_bad = gw_to("fenced", &bad);
    g_none = gw_to("fenced", NULL);

    f = echo_fenced_echo(g_good, &req, 0);
    cr_assert_eq(rpc_future_wait(f, WAIT_MS, &err), 0, "%s", err.message);
    rpc_future_unref(f);
    f = echo_fenced_echo(g_bad, &req, 0);
    cr_assert_eq(rpc_future_wait(f, WAIT_MS, &err), SPATE_EFENCED, "%s", err.message);
    cr_assert(strstr(err.message, id_str(&bad).s) != NULL, "%s", err.message);
    rpc_future_unref(f);
    f = echo_fenced_echo(g_none, &req, 0);
    cr_assert_eq(rpc_future_wait(f, WAIT_MS, &err), SPATE_EFENCED, "%s", err.message);
    rpc_future_unref(f);
    /* Unfenced methods of the same endpoint need no token. */
    cr_assert_eq(echo_once(g_none, 3, 0, 0, &err), 0, "%s", err.message);
    rpc_gateway_free(g_good);
    rpc_gateway_free(g_bad);
    rpc_gateway_free(g_none);
}

Test(rpc_remote, unknown_endpoint_and_stopped_endpoint)
{
    spate_error err = { 0 };
    struct rpc_gateway *gw;

    client_start();
    peer_start("0", NULL);
    gw = gw_to("nosuch", NULL);
    cr_assert_eq(echo_once(gw, 1, 0, 0, &err), SPATE_ENOENDPOINT, "%s", err.message);
    cr_assert(strstr(err.message, "'nosuch'") != NULL, "%s", err.message);
    rpc_gateway_free(gw);
}

Test(rpc_remote, endpoint_stopped_with_asks_pending)
{
    Echotest__Empty e = ECHOTEST__EMPTY__INIT;
    Echotest__Control ctl = ECHOTEST__CONTROL__INIT;
    struct rpc_future *held[20], *f;
    struct rpc_gateway *holder, *echo;
    spate_error err = { 0 };
    Echotest__Stats *s;

    client_start();
    peer_start("0", NULL);
    holder = gw_to("holder", NULL);
    echo = gw_to("echo", NULL);
    for (int i = 0; i < 20; i++)
        held[i] = echo_hold(holder, &e, 60000);
    /* Wait until the holder has them all, then stop it. */
    for (;;) {
        f = echo_stats(holder, &e, 0);
        cr_assert_eq(rpc_future_wait(f, WAIT_MS, &err), 0, "%s", err.message);
        s = rpc_future_value(f);
        if (s->held == 20) {
            rpc_future_unref(f);
            break;
        }
        rpc_future_unref(f);
    }
    ctl.command = "stop-holder";
    f = echo_control(echo, &ctl, 0);
    cr_assert_eq(rpc_future_wait(f, WAIT_MS, &err), 0, "%s", err.message);
    rpc_future_unref(f);
    /* Every held ask fails (with a 60 s timeout, a hang would show). */
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(rpc_future_wait(held[i], WAIT_MS, &err), SPATE_ENOENDPOINT, "ask %d: %s", i,
                     err.message);
        cr_assert(strstr(err.message, "stopped") != NULL, "%s", err.message);
        rpc_future_unref(held[i]);
    }
    /* Asks after the stop fail at once too. */
    f = echo_hold(holder, &e, 60000);
    cr_assert_eq(rpc_future_wait(f, WAIT_MS, &err), SPATE_ENOENDPOINT, "%s", err.message);
    rpc_future_unref(f);
    rpc_gateway_free(holder);
    rpc_gateway_free(echo);
}

Test(rpc_remote, peer_killed_mid_ask_is_connection_lost)
{
    Echotest__Empty e = ECHOTEST__EMPTY__INIT;
    struct rpc_future *held, *f;
    struct rpc_gateway *gw;
    spate_error err = { 0 };

    client_start();
    peer_start("0", NULL);
    gw = gw_to("holder", NULL);
    held = echo_hold(gw, &e, 60000);
    /* A reply on the same connection proves the hold arrived first. */
    f = echo_stats(gw, &e, 0);
    cr_assert_eq(rpc_future_wait(f, WAIT_MS, &err), 0, "%s", err.message);
    rpc_future_unref(f);
    peer_signal(&peer, SIGKILL);
    cr_assert_eq(rpc_future_wait(held, WAIT_MS, &err), SPATE_ECONNLOST, "%s", err.message);
    cr_assert(strstr(err.message, "connection lost") != NULL, "%s", err.message);
    rpc_future_unref(held);
    rpc_gateway_free(gw);
}

Test(rpc_remote, peer_that_never_answers_times_out)
{
    char *argv[] = { RPC_PEER_PATH, "mute", NULL };
    spate_error err = { 0 };
    struct rpc_gateway *gw;

    client_start();
    cr_assert_eq(peer_spawn(&peer, argv, NULL), 0);
    gw = gw_to("echo", NULL);
    cr_assert_eq(echo_once(gw, 1, 0, 300, &err), SPATE_ETIMEDOUT, "%s", err.message);
    rpc_gateway_free(gw);
}

Test(rpc_remote, reconnect_after_peer_restarts)
{
    spate_error err = { 0 };
    struct rpc_gateway *gw;
    char port[16];
    int failures = 0, rc;

    client_start();
    peer_start("0", NULL);
    gw = gw_to("echo", NULL);
    cr_assert_eq(echo_once(gw, 1, 0, 0, &err), 0, "%s", err.message);
    snprintf(port, sizeof port, "%d", peer.port);
    peer_signal(&peer, SIGKILL);
    peer_start(port, NULL);
    /* An ask may still meet the dead connection before its end is read;
     * that one fails with connection lost, and the next reconnects. */
    while ((rc = echo_once(gw, 2, 0, 0, &err)) != 0) {
        cr_assert_eq(rc, SPATE_ECONNLOST, "%s", err.message);
        cr_assert_lt(++failures, 3);
    }
    rpc_gateway_free(gw);
}

Test(rpc_remote, shared_secret_must_match)
{
    char *argv[] = { RPC_PEER_PATH, "serve", "--secret", "s3cret", NULL };
    struct rpc_service_options o = { .bind_host = "127.0.0.1", .port = "0", .secret = "wrong" };
    struct rpc_service *right;
    struct rpc_gateway *gw, *gw_right;
    spate_error err = { 0 };
    char addr[64];

    cr_assert_eq(rpc_service_new(&o, &svc, &err), 0, "%s", err.message);
    cr_assert_eq(rpc_service_start(svc, &err), 0, "%s", err.message);
    cr_assert_eq(peer_spawn(&peer, argv, NULL), 0);
    gw = gw_to("echo", NULL);
    cr_assert_eq(echo_once(gw, 1, 0, 0, &err), SPATE_ECONNLOST, "%s", err.message);
    cr_assert(strstr(err.message, "secret") != NULL, "%s", err.message);
    o.secret = "s3cret";
    cr_assert_eq(rpc_service_new(&o, &right, &err), 0, "%s", err.message);
    cr_assert_eq(rpc_service_start(right, &err), 0, "%s", err.message);
    snprintf(addr, sizeof addr, "127.0.0.1:%d/echo", peer.port);
    cr_assert_eq(rpc_gateway_new(right, addr, NULL, &gw_right, NULL), 0);
    cr_assert_eq(echo_once(gw_right, 2, 0, 0, &err), 0, "%s", err.message);
    rpc_gateway_free(gw);
    rpc_gateway_free(gw_right);
    rpc_service_free(right);
}

/* ---- heartbeats ---------------------------------------------------------------- */

struct hb_client {
    struct rpc_endpoint ep;
    struct heartbeat_manager *hm;
    struct rpc_future *lost;  /* completed with the reason as value */
    struct rpc_future *heard; /* completed at the first response */
    int64_t interval_ms, timeout_ms;
    spate_id own_id, peer_id;
    char peer_addr[128];
};

static void
hbc_lost(void *arg, const spate_id *target, int reason, const char *message)
{
    struct hb_client *c = arg;

    UNUSED(target);
    RPC_ASSERT_IN(&c->ep);
    cr_log_info("target lost: %s", message);
    rpc_future_complete(c->lost, (void *)(intptr_t)reason, NULL);
}

static void
hbc_heard(void *arg, const spate_id *target, const uint8_t *data, size_t len)
{
    struct hb_client *c = arg;

    UNUSED(target);
    UNUSED(data);
    UNUSED(len);
    if (!rpc_future_is_done(c->heard))
        rpc_future_complete(c->heard, NULL, NULL);
}

static const struct heartbeat_listener hbc_listener = { .target_lost = hbc_lost,
                                                        .payload_received = hbc_heard };

static void
hbc_start(void *arg)
{
    struct hb_client *c = arg;
    struct heartbeat_options o = { .channel = HEARTBEAT_TEST,
                                   .sender = true,
                                   .interval_ms = c->interval_ms,
                                   .timeout_ms = c->timeout_ms,
                                   .own_id = c->own_id };

    cr_assert_eq(rpc_endpoint_init(&c->ep, svc, "hbclient", NULL, NULL), 0);
    rpc_endpoint_bind(&c->ep, &heartbeat_protocol, &heartbeat_default_handlers);
    cr_assert_eq(rpc_endpoint_start(&c->ep, NULL), 0);
    c->lost = rpc_future_new(svc);
    c->heard = rpc_future_new(svc);
    c->hm = heartbeat_manager_new(&c->ep, &o, &hbc_listener, c);
    cr_assert_eq(heartbeat_monitor(c->hm, &c->peer_id, c->peer_addr, NULL), 0);
}

static void
hbc_stop(void *arg)
{
    struct hb_client *c = arg;

    heartbeat_manager_free(c->hm);
    rpc_future_unref(rpc_endpoint_stop(&c->ep));
}

/* The peer's "echo" endpoint monitors us (as a receiver), we monitor it (as
 * the sender); returns once a first heartbeat answer came back. */
static void
hb_setup(struct hb_client *c, int64_t interval, int64_t timeout)
{
    Echotest__Control ctl = ECHOTEST__CONTROL__INIT;
    Echotest__EchoReply *r;
    struct rpc_gateway *gw;
    struct rpc_future *f;
    spate_error err = { 0 };
    char me[160];

    memset(c, 0, sizeof *c);
    c->interval_ms = interval;
    c->timeout_ms = timeout;
    id_random(&c->own_id);
    snprintf(c->peer_addr, sizeof c->peer_addr, "127.0.0.1:%d/echo", peer.port);
    gw = gw_to("echo", NULL);
    ctl.command = "monitor";
    snprintf(me, sizeof me, "%s/hbclient", rpc_service_address(svc));
    ctl.arg = me;
    ctl.id.data = c->own_id.bytes;
    ctl.id.len = ID_BYTES;
    f = echo_control(gw, &ctl, 0);
    cr_assert_eq(rpc_future_wait(f, WAIT_MS, &err), 0, "%s", err.message);
    r = rpc_future_value(f);
    cr_assert_eq(r->data.len, ID_BYTES);
    memcpy(c->peer_id.bytes, r->data.data, ID_BYTES);
    rpc_future_unref(f);
    rpc_gateway_free(gw);
    rpc_service_run_sync(svc, NULL, hbc_start, c);
    cr_assert_eq(rpc_future_wait(c->heard, WAIT_MS, &err), 0, "no heartbeat answer: %s",
                 err.message);
}

static void
hb_teardown(struct hb_client *c)
{
    rpc_service_run_sync(svc, NULL, hbc_stop, c);
    rpc_future_unref(c->lost);
    rpc_future_unref(c->heard);
}

Test(rpc_remote, heartbeat_target_lost_when_peer_killed)
{
    static struct hb_client c; /* outlives its endpoint's last reference */
    spate_error err = { 0 };

    client_start();
    peer_start("0", NULL);
    /* A 60 s timeout: only the broken connection can explain a quick loss. */
    hb_setup(&c, 1000, 60000);
    peer_signal(&peer, SIGKILL);
    cr_assert_eq(rpc_future_wait(c.lost, WAIT_MS, &err), 0, "%s", err.message);
    cr_assert_eq((int)(intptr_t)rpc_future_value(c.lost), SPATE_ECONNLOST);
    hb_teardown(&c);
}

Test(rpc_remote, heartbeat_target_lost_when_peer_hangs)
{
    static struct hb_client c; /* outlives its endpoint's last reference */
    spate_error err = { 0 };

    client_start();
    peer_start("0", NULL);
    hb_setup(&c, 100, 1000);
    peer_signal(&peer, SIGSTOP);
    cr_assert_eq(rpc_future_wait(c.lost, WAIT_MS, &err), 0, "%s", err.message);
    cr_assert_eq((int)(intptr_t)rpc_future_value(c.lost), SPATE_ETIMEDOUT);
    hb_teardown(&c);
}
