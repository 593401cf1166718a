/* The HA stores (ha/stores.h) and the ZooKeeper services' election and
 * retrieval, against the in-memory stores and a real ZooKeeper server:
 * tests/support/with_zookeeper.py starts one for this program and passes
 * its address as SPATE_TEST_ZK. Each test uses a cluster id of its own. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/config.h"
#include "ha/ha_int.h"
#include "ha/ha_services.h"

static char tmpdir[256];

static struct config *
zk_conf(const char *extra_key, const char *extra_value)
{
    const char *quorum = getenv("SPATE_TEST_ZK");
    struct config *c = config_new();
    spate_id id;
    char cid[64];

    cr_assert(quorum != NULL, "run through tests/support/with_zookeeper.py (SPATE_TEST_ZK)");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/spate-ha-test-XXXXXX");
    cr_assert(mkdtemp(tmpdir) != NULL);
    id_random(&id);
    snprintf(cid, sizeof cid, "/t%s", id_str(&id).s);
    config_set(c, "high-availability.type", "zookeeper", "test");
    config_set(c, "high-availability.zookeeper.quorum", quorum, "test");
    config_set(c, "high-availability.cluster-id", cid, "test");
    config_set(c, "high-availability.storageDir", tmpdir, "test");
    config_set(c, "high-availability.zookeeper.client.session-timeout", "2 s", "test");
    config_set(c, "high-availability.zookeeper.client.connection-timeout", "5 s", "test");
    if (extra_key != NULL)
        config_set(c, extra_key, extra_value, "test");
    return c;
}

static struct ha_services *
zk_services(struct config *c)
{
    struct ha_services *ha = NULL;
    spate_error err = { 0 };

    cr_assert_eq(ha_services_new(c, NULL, &ha, &err), 0, "%s", err.message);
    return ha;
}

static void
rm_tree(void)
{
    char cmd[300];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- job graph store -------------------------------------------------------------- */

static void
check_job_graph_store(struct job_graph_store *s)
{
    struct job_graph_record r = { 0 }, out = { 0 };
    spate_error err = { 0 };
    spate_id a, b, *ids;
    size_t n;

    id_random(&a);
    id_random(&b);
    r.job_id = a;
    r.kind = "job-graph";
    r.data = (uint8_t *)"graph-a";
    r.len = 7;
    cr_assert_eq(s->ops->put(s, &r, &err), 0, "%s", err.message);
    r.job_id = b;
    r.data = (uint8_t *)"graph-b";
    cr_assert_eq(s->ops->put(s, &r, &err), 0, "%s", err.message);
    r.data = (uint8_t *)"graph-B2";
    r.len = 8;
    cr_assert_eq(s->ops->put(s, &r, &err), 0, "replacing: %s", err.message);

    cr_assert_eq(s->ops->job_ids(s, &ids, &n, &err), 0, "%s", err.message);
    cr_assert_eq(n, 2);
    cr_assert(id_equal(&ids[0], &a) || id_equal(&ids[1], &a));
    free(ids);

    cr_assert_eq(s->ops->get(s, &b, &out, &err), 0, "%s", err.message);
    cr_assert_str_eq(out.kind, "job-graph");
    cr_assert_eq(out.len, 8);
    cr_assert_eq(memcmp(out.data, "graph-B2", 8), 0);
    job_graph_record_release(&out);

    cr_assert_eq(s->ops->remove(s, &a, &err), 0, "%s", err.message);
    cr_assert_eq(s->ops->remove(s, &a, &err), 0, "removing twice is fine");
    cr_assert_eq(s->ops->get(s, &a, &out, &err), SPATE_ENOENT);
    cr_assert_eq(s->ops->job_ids(s, &ids, &n, &err), 0);
    cr_assert_eq(n, 1);
    free(ids);
}

Test(ha_stores, memory_job_graph_store)
{
    struct job_graph_store *s = ha_memory_job_graph_store_new();

    check_job_graph_store(s);
    s->ops->free(s);
}

Test(ha_stores, zookeeper_job_graph_store_survives_a_new_session)
{
    struct config *c = zk_conf(NULL, NULL);
    struct ha_services *ha = zk_services(c);
    struct job_graph_store *s;
    struct job_graph_record out = { 0 };
    spate_error err = { 0 };
    spate_id *ids;
    size_t n;

    cr_assert_eq(ha->ops->job_graph_store(ha, &s, &err), 0, "%s", err.message);
    check_job_graph_store(s);
    cr_assert_eq(s->ops->job_ids(s, &ids, &n, &err), 0);
    cr_assert_eq(n, 1);
    s->ops->free(s);
    ha_services_free(ha);

    /* Another process (a new leader) reads what the first one stored. */
    ha = zk_services(c);
    cr_assert_eq(ha->ops->job_graph_store(ha, &s, &err), 0, "%s", err.message);
    cr_assert_eq(s->ops->get(s, &ids[0], &out, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(out.data, "graph-B2", 8), 0);
    job_graph_record_release(&out);
    free(ids);
    s->ops->free(s);
    ha_services_free(ha);
    config_free(c);
    rm_tree();
}

Test(ha_stores, zookeeper_job_graph_with_corrupt_file_is_an_error)
{
    struct config *c = zk_conf(NULL, NULL);
    struct ha_services *ha = zk_services(c);
    struct job_graph_record r = { 0 }, out = { 0 };
    struct job_graph_store *s;
    spate_error err = { 0 };
    char cmd[600];
    spate_id a;

    cr_assert_eq(ha->ops->job_graph_store(ha, &s, &err), 0, "%s", err.message);
    id_random(&a);
    r.job_id = a;
    r.kind = "job-graph";
    r.data = (uint8_t *)"0123456789";
    r.len = 10;
    cr_assert_eq(s->ops->put(s, &r, &err), 0, "%s", err.message);
    /* Truncate every file of the storage folder: the pointer's size and
     * SHA-256 catch it. */
    snprintf(cmd, sizeof cmd, "find '%s' -name 'submittedJobGraph*' -exec truncate -s 3 {} +",
             tmpdir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(s->ops->get(s, &a, &out, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "truncated") != NULL, "%s", err.message);
    s->ops->free(s);
    ha_services_free(ha);
    config_free(c);
    rm_tree();
}

/* ---- job result store ---------------------------------------------------------------- */

static void
check_job_result_store(struct job_result_store *s)
{
    struct job_result r = { 0 }, *dirty;
    enum job_result_entry e;
    spate_error err = { 0 };
    size_t n;

    id_random(&r.job_id);
    snprintf(r.state, sizeof r.state, "FINISHED");
    r.end_time = 1234;
    cr_assert_eq(s->ops->lookup(s, &r.job_id, &e, &err), 0);
    cr_assert_eq(e, JOB_RESULT_NONE);
    cr_assert_eq(s->ops->create_dirty(s, &r, &err), 0, "%s", err.message);
    cr_assert_eq(s->ops->create_dirty(s, &r, &err), SPATE_EEXIST);
    cr_assert_eq(s->ops->lookup(s, &r.job_id, &e, &err), 0);
    cr_assert_eq(e, JOB_RESULT_DIRTY);
    cr_assert_eq(s->ops->dirty_results(s, &dirty, &n, &err), 0, "%s", err.message);
    cr_assert_eq(n, 1);
    cr_assert(id_equal(&dirty[0].job_id, &r.job_id));
    cr_assert_str_eq(dirty[0].state, "FINISHED");
    cr_assert_eq(dirty[0].end_time, 1234);
    job_result_release(&dirty[0]);
    free(dirty);
    cr_assert_eq(s->ops->mark_clean(s, &r.job_id, &err), 0, "%s", err.message);
    cr_assert_eq(s->ops->lookup(s, &r.job_id, &e, &err), 0);
    cr_assert_eq(e, JOB_RESULT_CLEAN);
    cr_assert_eq(s->ops->dirty_results(s, &dirty, &n, &err), 0);
    cr_assert_eq(n, 0);
    free(dirty);
}

Test(ha_stores, memory_job_result_store)
{
    struct job_result_store *s = ha_memory_job_result_store_new();

    check_job_result_store(s);
    s->ops->free(s);
}

Test(ha_stores, zookeeper_job_result_store_in_files)
{
    struct config *c = zk_conf(NULL, NULL);
    struct ha_services *ha = zk_services(c);
    struct job_result_store *s;
    spate_error err = { 0 };
    char garbage[400];
    FILE *f;

    cr_assert_eq(ha->ops->job_result_store(ha, &s, &err), 0, "%s", err.message);
    check_job_result_store(s);
    /* A foreign file among the results is skipped with a log line. */
    snprintf(garbage, sizeof garbage, "%s/job-result-store%s/00_DIRTY.pb", tmpdir,
             config_lookup(c, "high-availability.cluster-id"));
    cr_assert((f = fopen(garbage, "w")) != NULL, "%s", garbage);
    fputs("\xff\xff\xff garbage", f);
    fclose(f);
    {
        struct job_result *dirty;
        size_t n;

        cr_assert_eq(s->ops->dirty_results(s, &dirty, &n, &err), 0, "%s", err.message);
        cr_assert_eq(n, 0);
        free(dirty);
    }
    s->ops->free(s);
    ha_services_free(ha);
    config_free(c);
    rm_tree();
}

/* ---- completed checkpoints and the id counter ----------------------------------------- */

static void
check_checkpoint_store(struct completed_checkpoint_store *s)
{
    struct completed_checkpoint c = { 0 }, out = { 0 };
    spate_error err = { 0 };
    uint64_t *ids;
    size_t n;
    char meta[32];

    cr_assert_eq(s->ops->latest(s, &out, &err), SPATE_ENOENT);
    for (uint64_t id = 1; id <= 4; id++) {
        snprintf(meta, sizeof meta, "chk-%llu/_metadata", (unsigned long long)id);
        c.id = id;
        c.metadata = (uint8_t *)meta;
        c.len = strlen(meta);
        cr_assert_eq(s->ops->add(s, &c, &err), 0, "%s", err.message);
    }
    /* max_retained 2: the two oldest are subsumed. */
    cr_assert_eq(s->ops->ids(s, &ids, &n, &err), 0, "%s", err.message);
    cr_assert_eq(n, 2);
    cr_assert_eq(ids[0], 3);
    cr_assert_eq(ids[1], 4);
    free(ids);
    cr_assert_eq(s->ops->latest(s, &out, &err), 0, "%s", err.message);
    cr_assert_eq(out.id, 4);
    cr_assert_eq(out.len, strlen("chk-4/_metadata"));
    cr_assert_eq(memcmp(out.metadata, "chk-4/_metadata", out.len), 0);
    completed_checkpoint_release(&out);
    /* Suspended: the checkpoints stay for the next leader. */
    cr_assert_eq(s->ops->shutdown(s, false, &err), 0);
    cr_assert_eq(s->ops->ids(s, &ids, &n, &err), 0);
    cr_assert_eq(n, 2);
    free(ids);
}

Test(ha_stores, memory_checkpoint_store)
{
    struct completed_checkpoint_store *s = ha_memory_checkpoint_store_new(2);
    spate_error err = { 0 };
    uint64_t *ids;
    size_t n;

    check_checkpoint_store(s);
    cr_assert_eq(s->ops->shutdown(s, true, &err), 0);
    cr_assert_eq(s->ops->ids(s, &ids, &n, &err), 0);
    cr_assert_eq(n, 0);
    free(ids);
    s->ops->free(s);
}

Test(ha_stores, zookeeper_checkpoint_store_recovered_by_another_process)
{
    struct config *c = zk_conf(NULL, NULL);
    struct ha_services *ha = zk_services(c);
    struct completed_checkpoint_store *s;
    struct completed_checkpoint out = { 0 };
    spate_error err = { 0 };
    spate_id job;
    uint64_t *ids;
    size_t n;

    id_random(&job);
    cr_assert_eq(ha->ops->checkpoint_store(ha, &job, 2, &s, &err), 0, "%s", err.message);
    check_checkpoint_store(s);
    s->ops->free(s);
    ha_services_free(ha);

    ha = zk_services(c);
    cr_assert_eq(ha->ops->checkpoint_store(ha, &job, 2, &s, &err), 0, "%s", err.message);
    cr_assert_eq(s->ops->latest(s, &out, &err), 0, "%s", err.message);
    cr_assert_eq(out.id, 4);
    completed_checkpoint_release(&out);
    /* Globally terminal: everything goes, files too. */
    cr_assert_eq(s->ops->shutdown(s, true, &err), 0, "%s", err.message);
    cr_assert_eq(s->ops->ids(s, &ids, &n, &err), 0);
    cr_assert_eq(n, 0);
    free(ids);
    {
        char cmd[400];

        snprintf(cmd, sizeof cmd, "test -z \"$(find '%s' -name 'completedCheckpoint*')\"", tmpdir);
        cr_assert_eq(system(cmd), 0, "checkpoint files left behind");
    }
    s->ops->free(s);
    ha_services_free(ha);
    config_free(c);
    rm_tree();
}

static void
check_counter(struct checkpoint_id_counter *a, struct checkpoint_id_counter *b)
{
    spate_error err = { 0 };
    uint64_t v;

    cr_assert_eq(a->ops->get_and_increment(a, &v, &err), 0, "%s", err.message);
    cr_assert_eq(v, 1);
    cr_assert_eq(b->ops->get_and_increment(b, &v, &err), 0, "%s", err.message);
    cr_assert_eq(v, b == a ? 2 : 2, "the counter is shared");
    cr_assert_eq(a->ops->set(a, 100, &err), 0, "%s", err.message);
    cr_assert_eq(b->ops->get(b, &v, &err), 0);
    cr_assert_eq(v, 100);
}

Test(ha_stores, memory_checkpoint_id_counter)
{
    struct checkpoint_id_counter *c = ha_memory_checkpoint_id_counter_new();

    check_counter(c, c);
    c->ops->free(c);
}

struct counter_thread {
    struct checkpoint_id_counter *c;
    uint64_t got[50];
};

static void *
count_many(void *arg)
{
    struct counter_thread *t = arg;
    spate_error err = { 0 };

    for (int i = 0; i < 50; i++)
        if (t->c->ops->get_and_increment(t->c, &t->got[i], &err) != 0)
            t->got[i] = 0;
    return NULL;
}

Test(ha_stores, zookeeper_checkpoint_id_counter_shared_and_compare_and_set)
{
    struct config *c = zk_conf(NULL, NULL);
    struct ha_services *h1 = zk_services(c), *h2 = zk_services(c);
    struct checkpoint_id_counter *a, *b;
    struct counter_thread ta, tb;
    pthread_t t1, t2;
    spate_error err = { 0 };
    spate_id job;
    bool seen[201] = { false };

    id_random(&job);
    cr_assert_eq(h1->ops->checkpoint_id_counter(h1, &job, &a, &err), 0, "%s", err.message);
    cr_assert_eq(h2->ops->checkpoint_id_counter(h2, &job, &b, &err), 0, "%s", err.message);
    check_counter(a, b);
    /* Two sessions counting at once never hand out an id twice. */
    ta.c = a;
    tb.c = b;
    pthread_create(&t1, NULL, count_many, &ta);
    pthread_create(&t2, NULL, count_many, &tb);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    for (int i = 0; i < 50; i++) {
        cr_assert(ta.got[i] >= 100 && ta.got[i] < 200 && !seen[ta.got[i] - 100]);
        seen[ta.got[i] - 100] = true;
        cr_assert(tb.got[i] >= 100 && tb.got[i] < 200 && !seen[tb.got[i] - 100]);
        seen[tb.got[i] - 100] = true;
    }
    a->ops->free(a);
    b->ops->free(b);
    ha_services_free(h1);
    ha_services_free(h2);
    config_free(c);
    rm_tree();
}

/* ---- election and retrieval ---------------------------------------------------------------- */

struct probe {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int grants, revokes, notifies;
    spate_id session;
    char address[256];
};

static void
probe_grant(void *arg, const spate_id *session)
{
    struct probe *p = arg;

    pthread_mutex_lock(&p->mu);
    p->grants++;
    p->session = *session;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void
probe_revoke(void *arg)
{
    struct probe *p = arg;

    pthread_mutex_lock(&p->mu);
    p->revokes++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void
probe_notify(void *arg, const char *address, const spate_id *session)
{
    struct probe *p = arg;

    pthread_mutex_lock(&p->mu);
    p->notifies++;
    snprintf(p->address, sizeof p->address, "%s", address ? address : "");
    if (session != NULL)
        p->session = *session;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void
probe_error(void *arg, int code, const char *message)
{
    (void)arg;
    (void)code;
    (void)message;
}

static const struct leader_contender probe_contender = { probe_grant, probe_revoke };
static const struct leader_listener probe_listener = { probe_notify, probe_error };

static void
probe_init(struct probe *p)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
}

/* Waits (20 s at most) until *counter reaches want. */
static bool
probe_wait(struct probe *p, int *counter, int want)
{
    struct timespec ts;
    bool ok;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 20;
    pthread_mutex_lock(&p->mu);
    while (*counter < want && pthread_cond_timedwait(&p->cv, &p->mu, &ts) == 0)
        ;
    ok = *counter >= want;
    pthread_mutex_unlock(&p->mu);
    return ok;
}

Test(ha_election, one_leader_then_the_standby_with_a_new_session)
{
    struct config *c = zk_conf(NULL, NULL);
    struct ha_services *h1 = zk_services(c), *h2 = zk_services(c), *h3 = zk_services(c);
    struct leader_election *e1 = h1->ops->election(h1), *e2 = h2->ops->election(h2);
    struct leader_retrieval *r = h3->ops->resource_manager_retriever(h3);
    struct probe p1, p2, pr;
    spate_error err = { 0 };
    spate_id s1;

    probe_init(&p1);
    probe_init(&p2);
    probe_init(&pr);
    cr_assert_eq(leader_election_start(e1, &probe_contender, &p1, &err), 0, "%s", err.message);
    cr_assert(probe_wait(&p1, &p1.grants, 1), "the first contender leads");
    cr_assert_eq(leader_election_start(e2, &probe_contender, &p2, &err), 0, "%s", err.message);
    s1 = p1.session;
    cr_assert(leader_election_has_leadership(e1, &s1));
    cr_assert_eq(leader_retrieval_start(r, &probe_listener, &pr, &err), 0);
    leader_election_confirm(e1, HA_COMPONENT_RESOURCE_MANAGER, &s1, "127.0.0.1:1/resourcemanager");
    cr_assert(probe_wait(&pr, &pr.notifies, 1), "the retriever learns the leader");
    cr_assert_str_eq(pr.address, "127.0.0.1:1/resourcemanager");
    cr_assert(id_equal(&pr.session, &s1));
    cr_assert_eq(p2.grants, 0, "the standby does not lead");

    /* The leader goes (its session closes): the standby leads, with a new
     * session id; a confirmation under the old session is refused. */
    ha_services_free(h1);
    cr_assert(probe_wait(&p2, &p2.grants, 1), "the standby takes over");
    cr_assert(!id_equal(&p2.session, &s1), "a new leadership, a new session id");
    leader_election_confirm(e2, HA_COMPONENT_RESOURCE_MANAGER, &s1, "127.0.0.1:3/stale");
    leader_election_confirm(e2, HA_COMPONENT_RESOURCE_MANAGER, &p2.session,
                            "127.0.0.1:2/resourcemanager");
    cr_assert(probe_wait(&pr, &pr.notifies, 2), "the retriever follows");
    cr_assert_str_eq(pr.address, "127.0.0.1:2/resourcemanager");

    leader_retrieval_stop(r);
    leader_retrieval_free(r);
    ha_services_free(h2);
    ha_services_free(h3);
    config_free(c);
}

Test(ha_election, garbage_in_a_leader_node_is_ignored)
{
    struct config *c = zk_conf(NULL, NULL);
    struct ha_services *h1 = zk_services(c), *h2 = zk_services(c);
    struct zk_ha *zk = (struct zk_ha *)h2;
    struct leader_election *e1 = h1->ops->election(h1);
    struct leader_retrieval *r = h2->ops->dispatcher_retriever(h2);
    struct probe p1, pr;
    spate_error err = { 0 };
    char path[300], errbuf[300];

    probe_init(&p1);
    probe_init(&pr);
    snprintf(path, sizeof path, "%s/leader/%s", zk_ha_root(zk), HA_COMPONENT_DISPATCHER);
    cr_assert_eq(zk_ha_ensure_path(zk, path, &err), 0, "%s", err.message);
    strcat(path, "/connection_info");
    cr_assert_eq(zk_ha_plugin(zk)->create(zk_ha_client(zk), path, "\x0a\x03xyz\x12", 6, 0, NULL, 0,
                                          errbuf, sizeof errbuf),
                 0, "%s", errbuf);
    cr_assert_eq(leader_retrieval_start(r, &probe_listener, &pr, &err), 0);
    cr_assert_eq(leader_election_start(e1, &probe_contender, &p1, &err), 0);
    cr_assert(probe_wait(&p1, &p1.grants, 1));
    leader_election_confirm(e1, HA_COMPONENT_DISPATCHER, &p1.session, "127.0.0.1:9/dispatcher");
    cr_assert(probe_wait(&pr, &pr.notifies, 1));
    cr_assert_eq(pr.notifies, 1, "the garbage was never reported");
    cr_assert_str_eq(pr.address, "127.0.0.1:9/dispatcher");
    leader_retrieval_stop(r);
    leader_retrieval_free(r);
    ha_services_free(h1);
    ha_services_free(h2);
    config_free(c);
}

Test(ha_election, leader_info_decoding_rejects_garbage)
{
    spate_id s, back;
    spate_error err = { 0 };
    char addr[64];
    size_t len;
    uint8_t *b;

    id_random(&s);
    b = ha_leader_info_encode(&s, "127.0.0.1:6123/dispatcher", &len);
    cr_assert_eq(ha_leader_info_decode(b, len, &back, addr, sizeof addr, &err), 0);
    cr_assert(id_equal(&s, &back));
    cr_assert_str_eq(addr, "127.0.0.1:6123/dispatcher");
    cr_assert_eq(ha_leader_info_decode(b, len, &back, addr, 8, &err), SPATE_EPROTO);
    free(b);
    cr_assert_eq(
        ha_leader_info_decode((const uint8_t *)"garbage", 7, &back, addr, sizeof addr, &err),
        SPATE_EPROTO);
    cr_assert_eq(ha_leader_info_decode((const uint8_t *)"", 0, &back, addr, sizeof addr, &err),
                 SPATE_ENOENT);
}

Test(ha_services, embedded_retrievers_hear_what_the_leader_confirms)
{
    struct ha_services *ha = ha_embedded_new();
    struct leader_election *e = ha->ops->election(ha);
    struct leader_retrieval *r = ha->ops->rest_retriever(ha);
    struct probe p, pr;
    spate_error err = { 0 };
    spate_id stale;

    probe_init(&p);
    probe_init(&pr);
    cr_assert_eq(leader_retrieval_start(r, &probe_listener, &pr, &err), 0);
    cr_assert_eq(leader_election_start(e, &probe_contender, &p, &err), 0);
    cr_assert_eq(p.grants, 1);
    id_random(&stale);
    leader_election_confirm(e, HA_COMPONENT_REST_SERVER, &stale, "http://stale:1");
    cr_assert_eq(pr.notifies, 0);
    leader_election_confirm(e, HA_COMPONENT_REST_SERVER, &p.session, "http://127.0.0.1:8081");
    cr_assert_eq(pr.notifies, 1);
    cr_assert_str_eq(pr.address, "http://127.0.0.1:8081");
    leader_retrieval_stop(r);
    leader_retrieval_free(r);
    ha_services_free(ha);
}

Test(ha_services, unknown_quorum_setting_is_a_clear_error)
{
    struct config *c = config_new();
    struct ha_services *ha = NULL;
    spate_error err = { 0 };

    config_set(c, "high-availability", "zookeeper", "test"); /* Flink's older key */
    cr_assert_eq(ha_services_new(c, NULL, &ha, &err), SPATE_ECONFIG);
    cr_assert(strstr(err.message, "high-availability.zookeeper.quorum") != NULL, "%s", err.message);
    config_free(c);
}
