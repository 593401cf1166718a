/* A slot's shared resource (Flink's SharedResources, which its
 * MemoryManager keeps per slot for RocksDB's managed memory): made by its
 * first user, kept while any uses it, freed by the last. The TaskExecutor
 * owns one per slot, for as long as its tasks run; any thread (task
 * threads acquire and release): lock guards the resource and its users. */
#ifndef SPATE_STATE_SHARED_RESOURCES_H
#define SPATE_STATE_SHARED_RESOURCES_H

#include <pthread.h>

struct shared_resources {
    pthread_mutex_t lock;
    void *resource;
    void (*free_fn)(void *resource);
    int users;
};

void shared_resources_init(struct shared_resources *s);
/* After the last user released it. */
void shared_resources_release(struct shared_resources *s);
/* The resource, made by make(arg) (freed by free_fn) when there is none:
 * NULL when make failed. Each resource returned is released once. */
void *shared_resources_acquire(struct shared_resources *s, void *(*make)(void *arg),
                               void (*free_fn)(void *resource), void *arg);
void shared_resources_unref(struct shared_resources *s);

#endif
