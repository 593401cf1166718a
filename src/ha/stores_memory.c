/* The in-memory stores (stores.h) of high-availability.type none and
 * embedded: what a leader would recover lives as long as the process. Any
 * thread; each store's mutex guards its entries and is held only inside
 * its calls. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ha/ha_int.h"
#include "ha/stores.h"

void
job_graph_record_release(struct job_graph_record *r)
{
    if (r == NULL)
        return;
    free(r->kind);
    free(r->data);
    r->kind = NULL;
    r->data = NULL;
    r->len = 0;
}

void
job_result_release(struct job_result *r)
{
    if (r == NULL)
        return;
    free(r->failure);
    r->failure = NULL;
}

void
completed_checkpoint_release(struct completed_checkpoint *c)
{
    if (c == NULL)
        return;
    free(c->metadata);
    c->metadata = NULL;
    c->len = 0;
}

static uint8_t *
mem_dup(const uint8_t *data, size_t len)
{
    uint8_t *p = xmalloc(len ? len : 1);

    if (len)
        memcpy(p, data, len);
    return p;
}

/* ---- job graphs --------------------------------------------------------------------- */

struct mem_jgs {
    struct job_graph_store base;
    pthread_mutex_t mu;
    struct job_graph_record *recs;
    size_t n, cap;
};

static struct job_graph_record *
mjgs_find(struct mem_jgs *s, const spate_id *job)
{
    for (size_t i = 0; i < s->n; i++)
        if (id_equal(&s->recs[i].job_id, job))
            return &s->recs[i];
    return NULL;
}

static int
mjgs_put(struct job_graph_store *base, const struct job_graph_record *r, spate_error *err)
{
    struct mem_jgs *s = (struct mem_jgs *)base;
    struct job_graph_record *e;

    (void)err;
    pthread_mutex_lock(&s->mu);
    if ((e = mjgs_find(s, &r->job_id)) != NULL) {
        job_graph_record_release(e);
    } else {
        xgrow((void **)&s->recs, &s->cap, s->n + 1, sizeof *s->recs);
        e = &s->recs[s->n++];
    }
    e->job_id = r->job_id;
    e->kind = xstrdup(r->kind ? r->kind : "");
    e->data = mem_dup(r->data, r->len);
    e->len = r->len;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static int
mjgs_get(struct job_graph_store *base, const spate_id *job, struct job_graph_record *out,
         spate_error *err)
{
    struct mem_jgs *s = (struct mem_jgs *)base;
    struct job_graph_record *e;
    int rc = 0;

    pthread_mutex_lock(&s->mu);
    if ((e = mjgs_find(s, job)) == NULL) {
        rc = spate_error_set(err, SPATE_ENOENT, "no job graph of job %s", id_str(job).s);
    } else {
        out->job_id = e->job_id;
        out->kind = xstrdup(e->kind);
        out->data = mem_dup(e->data, e->len);
        out->len = e->len;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int
mjgs_job_ids(struct job_graph_store *base, spate_id **ids, size_t *count, spate_error *err)
{
    struct mem_jgs *s = (struct mem_jgs *)base;

    (void)err;
    pthread_mutex_lock(&s->mu);
    *ids = xcalloc(s->n ? s->n : 1, sizeof **ids);
    for (size_t i = 0; i < s->n; i++)
        (*ids)[i] = s->recs[i].job_id;
    *count = s->n;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static int
mjgs_remove(struct job_graph_store *base, const spate_id *job, spate_error *err)
{
    struct mem_jgs *s = (struct mem_jgs *)base;
    struct job_graph_record *e;

    (void)err;
    pthread_mutex_lock(&s->mu);
    if ((e = mjgs_find(s, job)) != NULL) {
        job_graph_record_release(e);
        *e = s->recs[--s->n];
    }
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static void
mjgs_free(struct job_graph_store *base)
{
    struct mem_jgs *s = (struct mem_jgs *)base;

    for (size_t i = 0; i < s->n; i++)
        job_graph_record_release(&s->recs[i]);
    free(s->recs);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static const struct job_graph_store_ops mjgs_ops = { mjgs_put, mjgs_get, mjgs_job_ids, mjgs_remove,
                                                     mjgs_free };

struct job_graph_store *
ha_memory_job_graph_store_new(void)
{
    struct mem_jgs *s = xcalloc(1, sizeof *s);

    s->base.ops = &mjgs_ops;
    pthread_mutex_init(&s->mu, NULL);
    return &s->base;
}

/* ---- job results -------------------------------------------------------------------- */

struct mem_jrs {
    struct job_result_store base;
    pthread_mutex_t mu;
    struct {
        struct job_result r;
        bool clean;
    } * e;
    size_t n, cap;
};

static int
mjrs_find(struct mem_jrs *s, const spate_id *job)
{
    for (size_t i = 0; i < s->n; i++)
        if (id_equal(&s->e[i].r.job_id, job))
            return (int)i;
    return -1;
}

static int
mjrs_create_dirty(struct job_result_store *base, const struct job_result *r, spate_error *err)
{
    struct mem_jrs *s = (struct mem_jrs *)base;
    int rc = 0;

    pthread_mutex_lock(&s->mu);
    if (mjrs_find(s, &r->job_id) >= 0) {
        rc =
            spate_error_set(err, SPATE_EEXIST, "job %s has a result already", id_str(&r->job_id).s);
    } else {
        xgrow((void **)&s->e, &s->cap, s->n + 1, sizeof *s->e);
        s->e[s->n].r = *r;
        s->e[s->n].r.failure = r->failure ? xstrdup(r->failure) : NULL;
        s->e[s->n].clean = false;
        s->n++;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int
mjrs_mark_clean(struct job_result_store *base, const spate_id *job, spate_error *err)
{
    struct mem_jrs *s = (struct mem_jrs *)base;
    int i, rc = 0;

    pthread_mutex_lock(&s->mu);
    if ((i = mjrs_find(s, job)) < 0)
        rc = spate_error_set(err, SPATE_ENOENT, "job %s has no result", id_str(job).s);
    else
        s->e[i].clean = true;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int
mjrs_lookup(struct job_result_store *base, const spate_id *job, enum job_result_entry *out,
            spate_error *err)
{
    struct mem_jrs *s = (struct mem_jrs *)base;
    int i;

    (void)err;
    pthread_mutex_lock(&s->mu);
    i = mjrs_find(s, job);
    *out = i < 0 ? JOB_RESULT_NONE : s->e[i].clean ? JOB_RESULT_CLEAN : JOB_RESULT_DIRTY;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static int
mjrs_dirty_results(struct job_result_store *base, struct job_result **out, size_t *count,
                   spate_error *err)
{
    struct mem_jrs *s = (struct mem_jrs *)base;
    size_t n = 0;

    (void)err;
    pthread_mutex_lock(&s->mu);
    *out = xcalloc(s->n ? s->n : 1, sizeof **out);
    for (size_t i = 0; i < s->n; i++) {
        if (s->e[i].clean)
            continue;
        (*out)[n] = s->e[i].r;
        (*out)[n].failure = s->e[i].r.failure ? xstrdup(s->e[i].r.failure) : NULL;
        n++;
    }
    *count = n;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static void
mjrs_free(struct job_result_store *base)
{
    struct mem_jrs *s = (struct mem_jrs *)base;

    for (size_t i = 0; i < s->n; i++)
        job_result_release(&s->e[i].r);
    free(s->e);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static const struct job_result_store_ops mjrs_ops = {
    mjrs_create_dirty, mjrs_mark_clean, mjrs_lookup, mjrs_dirty_results, mjrs_free,
};

struct job_result_store *
ha_memory_job_result_store_new(void)
{
    struct mem_jrs *s = xcalloc(1, sizeof *s);

    s->base.ops = &mjrs_ops;
    pthread_mutex_init(&s->mu, NULL);
    return &s->base;
}

/* ---- completed checkpoints -------------------------------------------------------------- */

struct mem_ccs {
    struct completed_checkpoint_store base;
    pthread_mutex_t mu;
    uint32_t max_retained;
    struct completed_checkpoint *c; /* oldest first */
    size_t n, cap;
};

static int
mccs_add(struct completed_checkpoint_store *base, const struct completed_checkpoint *c,
         spate_error *err)
{
    struct mem_ccs *s = (struct mem_ccs *)base;
    int rc = 0;

    pthread_mutex_lock(&s->mu);
    if (s->n > 0 && c->id <= s->c[s->n - 1].id) {
        rc =
            spate_error_set(err, SPATE_EINVAL, "checkpoint %llu is not newer than the latest, %llu",
                            (unsigned long long)c->id, (unsigned long long)s->c[s->n - 1].id);
        goto out;
    }
    xgrow((void **)&s->c, &s->cap, s->n + 1, sizeof *s->c);
    s->c[s->n].id = c->id;
    s->c[s->n].metadata = mem_dup(c->metadata, c->len);
    s->c[s->n].len = c->len;
    s->n++;
    while (s->n > s->max_retained) {
        completed_checkpoint_release(&s->c[0]);
        memmove(&s->c[0], &s->c[1], (s->n - 1) * sizeof *s->c);
        s->n--;
    }
out:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int
mccs_latest(struct completed_checkpoint_store *base, struct completed_checkpoint *out,
            spate_error *err)
{
    struct mem_ccs *s = (struct mem_ccs *)base;
    int rc = 0;

    pthread_mutex_lock(&s->mu);
    if (s->n == 0) {
        rc = spate_error_set(err, SPATE_ENOENT, "no completed checkpoint");
    } else {
        out->id = s->c[s->n - 1].id;
        out->metadata = mem_dup(s->c[s->n - 1].metadata, s->c[s->n - 1].len);
        out->len = s->c[s->n - 1].len;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int
mccs_ids(struct completed_checkpoint_store *base, uint64_t **ids, size_t *count, spate_error *err)
{
    struct mem_ccs *s = (struct mem_ccs *)base;

    (void)err;
    pthread_mutex_lock(&s->mu);
    *ids = xcalloc(s->n ? s->n : 1, sizeof **ids);
    for (size_t i = 0; i < s->n; i++)
        (*ids)[i] = s->c[i].id;
    *count = s->n;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static int
mccs_shutdown(struct completed_checkpoint_store *base, bool globally_terminal, spate_error *err)
{
    struct mem_ccs *s = (struct mem_ccs *)base;

    (void)err;
    if (!globally_terminal)
        return 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n; i++)
        completed_checkpoint_release(&s->c[i]);
    s->n = 0;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static void
mccs_free(struct completed_checkpoint_store *base)
{
    struct mem_ccs *s = (struct mem_ccs *)base;

    for (size_t i = 0; i < s->n; i++)
        completed_checkpoint_release(&s->c[i]);
    free(s->c);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static const struct completed_checkpoint_store_ops mccs_ops = { mccs_add, mccs_latest, mccs_ids,
                                                                mccs_shutdown, mccs_free };

struct completed_checkpoint_store *
ha_memory_checkpoint_store_new(uint32_t max_retained)
{
    struct mem_ccs *s = xcalloc(1, sizeof *s);

    s->base.ops = &mccs_ops;
    s->max_retained = max_retained ? max_retained : 1;
    pthread_mutex_init(&s->mu, NULL);
    return &s->base;
}

/* ---- checkpoint id counter ------------------------------------------------------------------ */

struct mem_counter {
    struct checkpoint_id_counter base;
    _Atomic uint64_t next; /* relaxed: the counter is the only shared datum */
};

static int
mctr_get_and_increment(struct checkpoint_id_counter *base, uint64_t *out, spate_error *err)
{
    (void)err;
    *out = atomic_fetch_add_explicit(&((struct mem_counter *)base)->next, 1, memory_order_relaxed);
    return 0;
}

static int
mctr_get(struct checkpoint_id_counter *base, uint64_t *out, spate_error *err)
{
    (void)err;
    *out = atomic_load_explicit(&((struct mem_counter *)base)->next, memory_order_relaxed);
    return 0;
}

static int
mctr_set(struct checkpoint_id_counter *base, uint64_t value, spate_error *err)
{
    (void)err;
    atomic_store_explicit(&((struct mem_counter *)base)->next, value, memory_order_relaxed);
    return 0;
}

static int
mctr_shutdown(struct checkpoint_id_counter *base, bool globally_terminal, spate_error *err)
{
    (void)base;
    (void)globally_terminal;
    (void)err;
    return 0;
}

static void
mctr_free(struct checkpoint_id_counter *base)
{
    free(base);
}

static const struct checkpoint_id_counter_ops mctr_ops = { mctr_get_and_increment, mctr_get,
                                                           mctr_set, mctr_shutdown, mctr_free };

struct checkpoint_id_counter *
ha_memory_checkpoint_id_counter_new(void)
{
    struct mem_counter *c = xcalloc(1, sizeof *c);

    c->base.ops = &mctr_ops;
    atomic_init(&c->next, 1);
    return &c->base;
}

/* ---- the in-memory stores as HA services' factories (none, embedded) ------- */

int
ha_memory_services_job_graph_store(struct ha_services *ha, struct job_graph_store **out,
                                   spate_error *err)
{
    (void)ha;
    (void)err;
    *out = ha_memory_job_graph_store_new();
    return 0;
}

int
ha_memory_services_job_result_store(struct ha_services *ha, struct job_result_store **out,
                                    spate_error *err)
{
    (void)ha;
    (void)err;
    *out = ha_memory_job_result_store_new();
    return 0;
}

int
ha_memory_services_checkpoint_store(struct ha_services *ha, const spate_id *job,
                                    uint32_t max_retained, struct completed_checkpoint_store **out,
                                    spate_error *err)
{
    (void)ha;
    (void)job;
    (void)err;
    *out = ha_memory_checkpoint_store_new(max_retained);
    return 0;
}

int
ha_memory_services_checkpoint_id_counter(struct ha_services *ha, const spate_id *job,
                                         struct checkpoint_id_counter **out, spate_error *err)
{
    (void)ha;
    (void)job;
    (void)err;
    *out = ha_memory_checkpoint_id_counter_new();
    return 0;
}

int64_t
ha_memory_services_no_session(struct ha_services *ha)
{
    (void)ha;
    return 0;
}

int
ha_memory_services_no_blob_store(struct ha_services *ha, char **out, spate_error *err)
{
    (void)ha;
    (void)err;
    *out = NULL;
    return 0;
}
