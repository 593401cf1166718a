/* A slot's shared resource (shared_resources.h). */
#include "core/util.h"
#include "state/shared_resources.h"

void
shared_resources_init(struct shared_resources *s)
{
    pthread_mutex_init(&s->lock, NULL);
    s->resource = NULL;
    s->free_fn = NULL;
    s->users = 0;
}

void
shared_resources_release(struct shared_resources *s)
{
    SPATE_ASSERT(s->users == 0);
    pthread_mutex_destroy(&s->lock);
}

void *
shared_resources_acquire(struct shared_resources *s, void *(*make)(void *arg),
                         void (*free_fn)(void *resource), void *arg)
{
    void *r;

    pthread_mutex_lock(&s->lock);
    if (s->resource == NULL) {
        s->resource = make(arg);
        s->free_fn = free_fn;
    }
    if ((r = s->resource) != NULL)
        s->users++;
    pthread_mutex_unlock(&s->lock);
    return r;
}

void
shared_resources_unref(struct shared_resources *s)
{
    void *r = NULL;

    pthread_mutex_lock(&s->lock);
    SPATE_ASSERT(s->users > 0);
    if (--s->users == 0) {
        r = s->resource;
        s->resource = NULL;
    }
    pthread_mutex_unlock(&s->lock);
    if (r != NULL)
        s->free_fn(r);
}
