/* The ZooKeeper services' first connection when the client's threads are
 * quicker than the thread that started them: this program exports its own
 * zookeeper_init (it interposes the plugin's call), which returns the real
 * handle only once the session is connected and its event was handed on.
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

/* The plugin's zookeeper_init (declared by zookeeper.h): the real one,
 * then a wait until its connection has been made and its session event
 * delivered. */
__attribute__((visibility("default"))) zhandle_t *
zookeeper_init(const char *host, watcher_fn fn, int recv_timeout, const clientid_t *clientid,
               void *context, int flags)
{
    zk_init_fn real = (zk_init_fn)dlsym(RTLD_NEXT, "zookeeper_init");
    zhandle_t *zh;

    if (real == NULL)
        return NULL;
    zh = real(host, fn, recv_timeout, clientid, context, flags);
    if (zh == NULL)
        return NULL;
    for (int i = 0; i < 2000 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++) {
        struct timespec ts = { 0, 5 * 1000 * 1000 };

        nanosleep(&ts, NULL);
    }
    /* The completion thread delivers the event after the state changed. */
    {
        struct timespec ts = { 0, 200 * 1000 * 1000 };

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
    ha_services_free(ha);
    config_free(c);
}
