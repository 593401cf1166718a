/* The JobManager process's leadership (jm_leadership.h). The callbacks run
 * on the election's thread and only hand on: the ResourceManager and the
 * Dispatcher apply grants and revokes as their endpoints. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/log.h"
#include "ha/ha_services.h"
#include "jobmanager/jm_leadership.h"

struct jm_leadership {
    struct leader_election *le;
    struct resource_manager *rm;
    struct dispatcher *d;
    char *rest_url;
};

static void
jml_grant(void *arg, const spate_id *session)
{
    struct jm_leadership *l = arg;

    SPATE_LOG_INFO("jobmanager", "this JobManager leads (session %s): REST at %s",
                   id_str(session).s, l->rest_url);
    resource_manager_grant_leadership(l->rm, session, l->le);
    dispatcher_grant_leadership(l->d, session, l->le);
    leader_election_confirm(l->le, HA_COMPONENT_REST_SERVER, session, l->rest_url);
}

static void
jml_revoke(void *arg)
{
    struct jm_leadership *l = arg;

    SPATE_LOG_WARN("jobmanager", "this JobManager no longer leads");
    resource_manager_revoke_leadership(l->rm);
    dispatcher_revoke_leadership(l->d);
}

static const struct leader_contender jml_contender = { jml_grant, jml_revoke };

int
jm_leadership_start(struct leader_election *le, struct resource_manager *rm, struct dispatcher *d,
                    const char *rest_url, struct jm_leadership **out, spate_error *err)
{
    struct jm_leadership *l = xcalloc(1, sizeof *l);
    int rc;

    l->le = le;
    l->rm = rm;
    l->d = d;
    l->rest_url = xstrdup(rest_url);
    if ((rc = leader_election_start(le, &jml_contender, l, err)) != 0) {
        free(l->rest_url);
        free(l);
        return rc;
    }
    *out = l;
    return 0;
}

void
jm_leadership_stop(struct jm_leadership *l)
{
    if (l == NULL)
        return;
    leader_election_stop(l->le);
    free(l->rest_url);
    free(l);
}
