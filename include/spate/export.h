/* Marks the symbols libspate.so exports (everything else is hidden). */
#ifndef SPATE_EXPORT_H
#define SPATE_EXPORT_H

#define SPATE_API __attribute__((visibility("default")))

#endif
