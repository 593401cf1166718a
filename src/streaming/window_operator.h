/* The window operator (window_operator.c): Flink's WindowOperator and
 * EvictingWindowOperator in one. Task thread only. */
#ifndef SPATE_STREAMING_WINDOW_OPERATOR_H
#define SPATE_STREAMING_WINDOW_OPERATOR_H

#include "streaming/operator.h"

extern const struct operator_vtable window_operator_vtable;

#endif
