/* The coordination client: the few ZooKeeper operations spate's HA needs,
 * as a table of functions that the ZooKeeper plugin (zookeeper_plugin.c,
 * libspate_zookeeper.so, loaded with dlopen) fills in. Calls are blocking
 * and thread-safe, but never made on the client's own event thread. */
#ifndef SPATE_HA_COORD_H
#define SPATE_HA_COORD_H

/* The plugin links only libc and libzookeeper-mt: nothing of libspate, so
 * the ABI below is plain C. Codes are spate's (SPATE_ENOENT for a missing
 * node, SPATE_EEXIST, SPATE_EAGAIN for a version mismatch, SPATE_EBUSY for a
 * node with children, SPATE_ECONNLOST when the connection or session is
 * gone, SPATE_EIO otherwise); messages go into errbuf. Memory a call
 * returns (data, names) is malloc'd: the caller frees it with free(). */

#include <stddef.h>
#include <stdint.h>

#define COORD_ABI_VERSION   1
#define COORD_PLUGIN_SYMBOL "spate_ha_zookeeper_plugin"

/* Connection states, as events report them and coord_state returns. */
enum coord_state {
    COORD_CONNECTING = 1, /* no connection; the session may still live */
    COORD_CONNECTED = 2,
    COORD_EXPIRED = 3, /* the session is gone: ephemeral nodes deleted, watches lost */
    COORD_AUTH_FAILED = 4,
    COORD_CLOSED = 5,
};

/* Event types: a watch that fired (on path), or the session's state. */
enum coord_event {
    COORD_EV_SESSION = 1,
    COORD_EV_CREATED = 2,
    COORD_EV_DELETED = 3,
    COORD_EV_CHANGED = 4,
    COORD_EV_CHILD = 5,
    COORD_EV_NOT_WATCHING = 6,
};

/* Node flags for create. */
#define COORD_EPHEMERAL  1
#define COORD_SEQUENTIAL 2

struct coord_client;

/* Runs on the client's event thread: hand the news to another thread. */
typedef void (*coord_event_fn)(void *arg, int event, int state, const char *path);
/* The plugin's log lines (level: 0 debug, 1 info, 2 warn, 3 error). */
typedef void (*coord_log_fn)(int level, const char *message);

struct coord_plugin {
    int abi_version;
    /* Starts connecting to quorum ("host:port,host:port[/chroot]"); the
     * first COORD_CONNECTED arrives as an event. */
    int (*connect)(const char *quorum, int session_timeout_ms, coord_event_fn fn, void *arg,
                   coord_log_fn log, struct coord_client **out, char *errbuf, size_t errlen);
    /* A new session on the same quorum (after COORD_EXPIRED); events of the
     * old one stop. */
    int (*reconnect)(struct coord_client *c, char *errbuf, size_t errlen);
    int (*state)(struct coord_client *c);
    /* The session timeout the server granted (0 until connected). */
    int (*session_timeout_ms)(struct coord_client *c);
    int64_t (*session_id)(struct coord_client *c);

    /* out_path (may be NULL) gets the created node's path (with a
     * sequential node's suffix). */
    int (*create)(struct coord_client *c, const char *path, const void *data, size_t len, int flags,
                  char *out_path, size_t out_size, char *errbuf, size_t errlen);
    /* watch: a one-time watch on the node that fires as an event. */
    int (*get)(struct coord_client *c, const char *path, int watch, uint8_t **data, size_t *len,
               int32_t *version, char *errbuf, size_t errlen);
    /* version -1: any. */
    int (*set)(struct coord_client *c, const char *path, const void *data, size_t len,
               int32_t version, char *errbuf, size_t errlen);
    int (*remove)(struct coord_client *c, const char *path, int32_t version, char *errbuf,
                  size_t errlen);
    /* 0 when the node exists, SPATE_ENOENT when not; watch fires on its
     * creation, change or deletion. */
    int (*exists)(struct coord_client *c, const char *path, int watch, char *errbuf, size_t errlen);
    int (*children)(struct coord_client *c, const char *path, int watch, char ***names,
                    size_t *count, char *errbuf, size_t errlen);
    /* Atomically: check_path exists, and path gets data (set, or created
     * when missing). The leader's write of its information, so that a
     * former leader (whose latch node is gone) cannot overwrite it. */
    int (*check_and_put)(struct coord_client *c, const char *check_path, const char *path,
                         const void *data, size_t len, char *errbuf, size_t errlen);
    void (*close)(struct coord_client *c);
};

typedef const struct coord_plugin *(*coord_plugin_entry_fn)(void);

#endif
