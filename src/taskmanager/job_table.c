/* The job table (job_table.h). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "taskmanager/job_table.h"

void
job_table_init(struct job_table *t)
{
    hmap_init(&t->jobs);
}

static void
job_entry_free(struct job_entry *e)
{
    rpc_gateway_free(e->jm);
    free(e->jm_address);
    free(e);
}

void
job_table_release(struct job_table *t)
{
    struct hmap_node *n;

    while ((n = hmap_first(&t->jobs)) != NULL) {
        hmap_remove(&t->jobs, n);
        job_entry_free(container_of(n, struct job_entry, node));
    }
    hmap_release(&t->jobs);
}

struct job_entry *
job_table_find(struct job_table *t, const spate_id *job)
{
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, id_hash(job), &t->jobs)
    {
        struct job_entry *e = container_of(n, struct job_entry, node);

        if (id_equal(&e->job_id, job))
            return e;
    }
    return NULL;
}

struct job_entry *
job_table_get_or_create(struct job_table *t, const spate_id *job, const spate_id *jm_id,
                        const char *jm_address)
{
    struct job_entry *e = job_table_find(t, job);

    if (e != NULL)
        return e;
    e = xcalloc(1, sizeof *e);
    e->job_id = *job;
    e->jm_id = *jm_id;
    e->jm_address = xstrdup(jm_address);
    hmap_insert(&t->jobs, &e->node, id_hash(job));
    return e;
}

void
job_table_remove(struct job_table *t, struct job_entry *e)
{
    hmap_remove(&t->jobs, &e->node);
    job_entry_free(e);
}

size_t
job_table_count(const struct job_table *t)
{
    return hmap_count(&t->jobs);
}
