/* Finding the leaders from a client (cli_leader.h): a retriever of the HA
 * services tells an address, on whatever thread it likes; this thread waits
 * for it under a mutex. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli_leader.h"
#include "ha/ha_services.h"

struct cli_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char address[512];
    bool found;
};

static void
cli_on_leader(void *arg, const char *address, const spate_id *session)
{
    struct cli_wait *w = arg;

    (void)session;
    pthread_mutex_lock(&w->mu);
    if (address != NULL) {
        snprintf(w->address, sizeof w->address, "%s", address);
        w->found = true;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
}

static void
cli_on_error(void *arg, int code, const char *message)
{
    (void)arg;
    (void)code;
    (void)message;
}

static const struct leader_listener cli_listener = { cli_on_leader, cli_on_error };

int
cli_find_leader(const struct config *conf, enum cli_leader which, char *out, size_t size,
                int64_t timeout_ms, spate_error *err)
{
    struct cli_wait w = { .found = false };
    struct ha_services *ha = NULL;
    struct leader_retrieval *lr;
    struct timespec deadline;
    int rc;

    if ((rc = ha_services_from_config(conf, &ha, err)) != 0)
        return rc;
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    lr = which == CLI_LEADER_REST ? ha->ops->rest_retriever(ha) : ha->ops->dispatcher_retriever(ha);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (timeout_ms % 1000) * 1000000;
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    if ((rc = leader_retrieval_start(lr, &cli_listener, &w, err)) == 0) {
        pthread_mutex_lock(&w.mu);
        while (!w.found && pthread_cond_timedwait(&w.cv, &w.mu, &deadline) == 0)
            ;
        if (w.found)
            snprintf(out, size, "%s", w.address);
        else
            rc = spate_error_set(err, SPATE_ETIMEDOUT, "no leading JobManager known within %lld ms",
                                 (long long)timeout_ms);
        pthread_mutex_unlock(&w.mu);
    }
    leader_retrieval_stop(lr);
    leader_retrieval_free(lr);
    ha_services_free(ha);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    return rc;
}
