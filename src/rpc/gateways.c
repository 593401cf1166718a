/* The cluster's protocols (gateways.h): method tables and dispatch. */
#include <string.h>

#include "rpc/gateways.h"

RPC_PROTOCOL_DEFINE(rm, 3, RM_METHODS)
RPC_PROTOCOL_DEFINE(te, 4, TE_METHODS)
RPC_PROTOCOL_DEFINE(jm, 5, JM_METHODS)
RPC_PROTOCOL_DEFINE(dispatcher, 6, DISPATCHER_METHODS)
