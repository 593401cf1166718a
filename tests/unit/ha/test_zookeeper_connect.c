/* The ZooKeeper services' first connection when the client's threads are
 * quicker than the thread that started them: this program exports its own
 * zookeeper_init (it interposes the plugin's call), which returns the real
 * handle only once the connection's event was handed to the plugin.
 * That event was dropped as a replaced handle's (the handle was not current
 * yet) and the first connection never seen: a TaskManager of e2e/ha waited
 * 21 s on a loaded machine for a ZooKeeper every other process reached.
 * Run through tests/support/with_zookeeper.py (SPATE_TEST_ZK). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <zookeeper/zookeeper.h>

#include "core/config.h"
#include "core/id.h"
#include "ha/ha_services.h"

typedef zhandle_t *(*zk_init_fn)(const char *host, watcher_fn fn, int recv_timeout,
                                 const clientid_t *clientid, void *context, int flags);

static atomic_int slow_inits;
/* The plugin's watcher and its context, and whether the connection's
 * session event has gone through it. */
static watcher_fn plugin_watcher;
static void *plugin_context;
static atomic_int connection_delivered;

/* Hands every event to the plugin's watcher, then notes the connection's. */
static void
forward(zhandle_t *zh, int type, int state, const char *path, void *context)
{
    (void)context;
    plugin_watcher(zh, type, state, path, plugin_context);
    if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE)
        atomic_store(&connection_delivered, 1);
}

/* The plugin's zookeeper_init (declared by zookeeper.h): the real one,
 * watched through forward, returned only once the plugin's watcher has
 * been handed the connection. */
__attribute__((visibility("default"))) zhandle_t *
zookeeper_init(const char *host, watcher_fn fn, int recv_timeout, const clientid_t *clientid,
               void *context, int flags)
{
    zk_init_fn real = (zk_init_fn)dlsym(RTLD_NEXT, "zookeeper_init");
    zhandle_t *zh;

    if (real == NULL)
        return NULL;
    plugin_watcher = fn;
    plugin_context = context;
    zh = real(host, forward, recv_timeout, clientid, context, flags);
    if (zh == NULL)
        return NULL;
    for (int i = 0; i < 10000 && !atomic_load(&connection_delivered); i++) {
        struct timespec ts = { 0, 1000 * 1000 };

        nanosleep(&ts, NULL);
    }
    atomic_fetch_add(&slow_inits, 1);
    return zh;
}

Test(zookeeper_connect, connected_before_the_client_handle_is_returned)
{
    const char *quorum = getenv("SPATE_TEST_ZK");
    struct config *c = config_new();
    struct ha_services *ha = NULL;
    spate_error err = { 0 };
    spate_id id;
    char cid[64];

    cr_assert(quorum != NULL, "run through tests/support/with_zookeeper.py (SPATE_TEST_ZK)");
    id_random(&id);
    snprintf(cid, sizeof cid, "/t%s", id_str(&id).s);
    config_set(c, "high-availability.type", "zookeeper", "test");
    config_set(c, "high-availability.zookeeper.quorum", quorum, "test");
    config_set(c, "high-availability.cluster-id", cid, "test");
    config_set(c, "high-availability.zookeeper.client.session-timeout", "2 s", "test");
    /* One attempt: the session is connected long before it ends. */
    config_set(c, "high-availability.zookeeper.client.connection-timeout", "5 s", "test");
    config_set(c, "high-availability.zookeeper.client.max-retry-attempts", "0", "test");
    cr_assert_eq(ha_services_new(c, NULL, &ha, &err), 0, "%s", err.message);
    cr_assert_eq(atomic_load(&slow_inits), 1, "the plugin's zookeeper_init was not this one");
    cr_assert(atomic_load(&connection_delivered), "no connection within 10 s");
    ha_services_free(ha);
    config_free(c);
}
