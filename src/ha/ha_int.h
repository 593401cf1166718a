/* What src/ha's modules share inside the folder: the ZooKeeper services'
 * struct (zookeeper.c) the ZooKeeper stores (stores_zk.c) use, the files
 * under high-availability.storageDir (ha_files.c), and the notification
 * guard every listener-calling object uses. */
#ifndef SPATE_HA_HA_INT_H
#define SPATE_HA_HA_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ha/coord.h"
#include "ha/ha_services.h"

#define HA_LOG "ha"

/* ---- calling listeners safely ------------------------------------------------
 * A retriever or election calls its listener without holding a lock; stop
 * must not return while such a call is in flight (the listener's owner may
 * be freed right after). notify_begin/end bracket a call, stop waits for
 * them (unless the caller is that very call: then nothing is in flight
 * that could outlive it). */
struct ha_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopped;
    bool notifying;
    pthread_t notifier;
};

void ha_guard_init(struct ha_guard *g);
void ha_guard_release(struct ha_guard *g);
/* False when stopped: then do not call. */
bool ha_guard_begin(struct ha_guard *g);
void ha_guard_end(struct ha_guard *g);
void ha_guard_stop(struct ha_guard *g);

/* The in-memory stores as the services' factories (stores_memory.c), shared
 * by standalone and embedded; their session timeout is none (0). */
int ha_memory_services_job_graph_store(struct ha_services *ha, struct job_graph_store **out,
                                       spate_error *err);
int ha_memory_services_job_result_store(struct ha_services *ha, struct job_result_store **out,
                                        spate_error *err);
int ha_memory_services_checkpoint_store(struct ha_services *ha, const spate_id *job,
                                        uint32_t max_retained,
                                        struct completed_checkpoint_store **out, spate_error *err);
int ha_memory_services_checkpoint_id_counter(struct ha_services *ha, const spate_id *job,
                                             struct checkpoint_id_counter **out, spate_error *err);
int64_t ha_memory_services_no_session(struct ha_services *ha);
int ha_memory_services_no_blob_store(struct ha_services *ha, char **out, spate_error *err);

/* The ZooKeeper plugin, loaded once (plugin.c). */
int ha_plugin_load_zookeeper(const struct coord_plugin **out, spate_error *err);

/* ---- the ZooKeeper services ------------------------------------------------- */

struct zk_ha;

/* The client (calls may block; never on the client's event thread), the
 * znode root "<path.root>/<cluster-id>" and the storage folder
 * "<storageDir>/<cluster-id>" (NULL when storageDir is unset). */
const struct coord_plugin *zk_ha_plugin(struct zk_ha *ha);
struct coord_client *zk_ha_client(struct zk_ha *ha);
const char *zk_ha_root(struct zk_ha *ha);
const char *zk_ha_storage(struct zk_ha *ha);
/* Creates path and its parents (persistent, empty); existing ones are fine. */
int zk_ha_ensure_path(struct zk_ha *ha, const char *path, spate_error *err);

int zk_job_graph_store_new(struct zk_ha *ha, struct job_graph_store **out, spate_error *err);
int zk_checkpoint_store_new(struct zk_ha *ha, const spate_id *job, uint32_t max_retained,
                            struct completed_checkpoint_store **out, spate_error *err);
int zk_checkpoint_id_counter_new(struct zk_ha *ha, const spate_id *job,
                                 struct checkpoint_id_counter **out, spate_error *err);

/* ---- files under the storage folder --------------------------------------------
 * Written to a temporary name, synced, then renamed: a reader sees a whole
 * file or none. The pointer (ha.proto's StatePointer) says path, size and
 * SHA-256; reading checks all three. */
int ha_file_write(const char *dir, const char *prefix, const uint8_t *data, size_t len,
                  uint8_t **pointer, size_t *pointer_len, spate_error *err);
int ha_file_read(const uint8_t *pointer, size_t pointer_len, uint8_t **data, size_t *len,
                 spate_error *err);
/* Deletes the file a pointer names (a missing one is fine). */
int ha_file_remove(const uint8_t *pointer, size_t pointer_len, spate_error *err);
int ha_mkdirs(const char *dir, spate_error *err);

#endif
