/* rpc_peer: the other process of the RPC tests. `rpc_peer serve [--port P]
 * [--token HEX] [--secret S] [--cluster C] [--max-frame B]
 * [--handshake-timeout MS]` serves "echo", "holder" and "fenced" and prints
 * "LISTENING <port>"; `rpc_peer mute [--port P]` accepts and never answers
 * (a hung peer). Logs go to stderr; SIGTERM ends it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "core/log.h"
#include "rpc/service.h"
#include "support/echo.h"

static struct echo_server echo_ep, holder_ep, fenced_ep;
static spate_id fence_token;
static int have_token;
static volatile sig_atomic_t stop_requested;

static void
start_endpoints(void *arg)
{
    struct rpc_service *svc = arg;
    spate_error err = { 0 };

    if (echo_server_start(&echo_ep, svc, "echo", NULL, &err) != 0 ||
        echo_server_start(&holder_ep, svc, "holder", NULL, &err) != 0 ||
        echo_server_start(&fenced_ep, svc, "fenced", have_token ? &fence_token : NULL, &err) != 0) {
        fprintf(stderr, "rpc_peer: %s\n", err.message);
        exit(1);
    }
    echo_ep.holder = &holder_ep;
}

static void
on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void
on_exit_command(void)
{
    _exit(0);
}

static int64_t handshake_timeout_ms;

static int
serve(const char *port, const char *secret, const char *cluster, size_t max_frame)
{
    struct rpc_service_options o = { .handshake_timeout_ms = handshake_timeout_ms,
                                     .bind_host = "127.0.0.1",
                                     .port = port,
                                     .secret = secret,
                                     .cluster_id = cluster,
                                     .max_frame_bytes = max_frame,
                                     .thread_name = "rpc" };
    struct rpc_service *svc;
    spate_error err = { 0 };
    sigset_t set;

    if (rpc_service_new(&o, &svc, &err) != 0 || rpc_service_start(svc, &err) != 0) {
        fprintf(stderr, "rpc_peer: %s\n", err.message);
        return 1;
    }
    rpc_service_run_sync(svc, NULL, start_endpoints, svc);
    echo_ep.on_exit = on_exit_command;
    printf("LISTENING %d\n", rpc_service_port(svc));
    fflush(stdout);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    sigemptyset(&set);
    while (!stop_requested)
        sigsuspend(&set);
    rpc_service_free(svc);
    return 0;
}

static void
mute_on_connection(uv_stream_t *server, int status)
{
    uv_tcp_t *c;

    if (status < 0)
        return;
    c = malloc(sizeof *c);
    uv_tcp_init(server->loop, c);
    uv_accept(server, (uv_stream_t *)c); /* and never read or write */
}

static int
mute(const char *port)
{
    uv_loop_t *loop = uv_default_loop();
    uv_tcp_t server;
    struct sockaddr_in sa;
    struct sockaddr_storage bound;
    int len = sizeof bound;

    uv_ip4_addr("127.0.0.1", atoi(port), &sa);
    uv_tcp_init(loop, &server);
    if (uv_tcp_bind(&server, (const struct sockaddr *)&sa, 0) != 0 ||
        uv_listen((uv_stream_t *)&server, 128, mute_on_connection) != 0) {
        fprintf(stderr, "rpc_peer: cannot listen on port %s\n", port);
        return 1;
    }
    uv_tcp_getsockname(&server, (struct sockaddr *)&bound, &len);
    printf("LISTENING %d\n", ntohs(((struct sockaddr_in *)&bound)->sin_port));
    fflush(stdout);
    return uv_run(loop, UV_RUN_DEFAULT);
}

int
main(int argc, char **argv)
{
    const char *port = "0", *secret = NULL, *cluster = NULL;
    size_t max_frame = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: rpc_peer serve|mute [options]\n");
        return 2;
    }
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--port") == 0) {
            port = argv[i + 1];
        } else if (strcmp(argv[i], "--secret") == 0) {
            secret = argv[i + 1];
        } else if (strcmp(argv[i], "--cluster") == 0) {
            cluster = argv[i + 1];
        } else if (strcmp(argv[i], "--handshake-timeout") == 0) {
            handshake_timeout_ms = strtoll(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "--max-frame") == 0) {
            max_frame = strtoull(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "--token") == 0) {
            if (id_parse(argv[i + 1], &fence_token, NULL) != 0)
                return 2;
            have_token = 1;
        }
    }
    if (getenv("SPATE_LOG_LEVEL") != NULL) {
        enum log_level level;

        if (log_parse_level(getenv("SPATE_LOG_LEVEL"), &level, NULL) == 0)
            log_set_level(level);
    }
    if (strcmp(argv[1], "serve") == 0)
        return serve(port, secret, cluster, max_frame);
    if (strcmp(argv[1], "mute") == 0)
        return mute(port);
    fprintf(stderr, "rpc_peer: unknown mode '%s'\n", argv[1]);
    return 2;
}
