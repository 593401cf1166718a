/* zk_put QUORUM PATH DATA: writes DATA into znode PATH (creating it and its
 * parents), for tests that put garbage where spate keeps its leader
 * information. Exits 0 on success. Uses libzookeeper-mt directly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

int
main(int argc, char **argv)
{
    zhandle_t *zh;
    char *p;
    int rc = ZOK;

    if (argc != 4) {
        fprintf(stderr, "usage: zk_put QUORUM PATH DATA\n");
        return 2;
    }
    zoo_set_debug_level((ZooLogLevel)0);
    zh = zookeeper_init(argv[1], NULL, 10000, NULL, NULL, 0);
    for (int i = 0; zh != NULL && zoo_state(zh) != ZOO_CONNECTED_STATE && i < 200; i++)
        usleep(50000);
    if (zh == NULL || zoo_state(zh) != ZOO_CONNECTED_STATE) {
        fprintf(stderr, "zk_put: cannot connect to %s\n", argv[1]);
        return 1;
    }
    p = strdup(argv[2]);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        zoo_create(zh, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        *s = '/';
    }
    rc = zoo_create(zh, p, argv[3], (int)strlen(argv[3]), &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc == ZNODEEXISTS)
        rc = zoo_set(zh, p, argv[3], (int)strlen(argv[3]), -1);
    if (rc != ZOK)
        fprintf(stderr, "zk_put: %s: %s\n", p, zerror(rc));
    free(p);
    zookeeper_close(zh);
    return rc == ZOK ? 0 : 1;
}
