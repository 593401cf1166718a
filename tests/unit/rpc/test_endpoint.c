/* Unit tests of src/rpc/endpoint.c: an endpoint's log fields prefix the
 * lines its code logs on the shared loop thread, and only those. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "rpc/endpoint.h"
#include "rpc/future.h"
#include "rpc/service.h"

static struct rpc_service *svc;

struct two {
    struct rpc_endpoint job, plain;
    struct rpc_future *done;
};

static void
log_as_job(void *arg)
{
    struct two *t = arg;

    SPATE_LOG_INFO("jobmaster", "checkpoint %d triggered", 3);
    rpc_future_complete(t->done, NULL, NULL);
}

static void
log_as_plain(void *arg)
{
    struct two *t = arg;

    SPATE_LOG_INFO("resourcemanager", "slot request");
    rpc_endpoint_run_async(&t->job, log_as_job, t);
}

static void
start(void *arg)
{
    struct two *t = arg;

    cr_assert_eq(rpc_endpoint_init(&t->job, svc, "jobmaster_x", NULL, NULL), 0);
    cr_assert_eq(rpc_endpoint_init(&t->plain, svc, "resourcemanager", NULL, NULL), 0);
    rpc_endpoint_set_log_fields(&t->job, "job=%s", "ab12");
    cr_assert_eq(rpc_endpoint_start(&t->job, NULL), 0);
    cr_assert_eq(rpc_endpoint_start(&t->plain, NULL), 0);
    t->done = rpc_future_new(svc);
    SPATE_LOG_INFO("rpc", "outside any endpoint");
    rpc_endpoint_run_async(&t->plain, log_as_plain, t);
}

static void
stop(void *arg)
{
    struct two *t = arg;

    rpc_future_unref(rpc_endpoint_stop(&t->job));
    rpc_future_unref(rpc_endpoint_stop(&t->plain));
}

static char *
slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    static char buf[65536];
    size_t n;

    cr_assert_not_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

Test(endpoint, its_log_fields_prefix_the_lines_of_its_code_only)
{
    struct rpc_service_options o = { 0 };
    char path[] = "/tmp/spate-test-endpoint-log-XXXXXX";
    int fd = mkstemp(path);
    struct two t;
    spate_error err;
    char *text;

    close(fd);
    memset(&t, 0, sizeof t);
    cr_assert_eq(log_open_file(path, &err), 0);
    log_set_level(LOG_LEVEL_INFO);
    cr_assert_eq(rpc_service_new(&o, &svc, NULL), 0);
    cr_assert_eq(rpc_service_start(svc, NULL), 0);
    rpc_service_run_sync(svc, NULL, start, &t);
    cr_assert_eq(rpc_future_wait(t.done, 20000, NULL), 0);
    rpc_service_run_sync(svc, NULL, stop, &t);
    rpc_future_unref(t.done);
    rpc_service_free(svc);
    log_close_file();
    text = slurp(path);
    cr_assert(strstr(text, "jobmaster: job=ab12 checkpoint 3 triggered\n") != NULL, "%s", text);
    cr_assert(strstr(text, "resourcemanager: slot request\n") != NULL, "%s", text);
    cr_assert(strstr(text, "rpc: outside any endpoint\n") != NULL, "%s", text);
    unlink(path);
}
