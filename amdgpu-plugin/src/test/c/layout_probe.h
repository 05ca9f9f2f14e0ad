/* Prints sizes, field offsets and constant values of C declarations, one per line, for
 * LayoutConformanceTest:  S <struct> <size> | F <struct> <field> <offset> <size> | C <name> <unsigned value> */
#ifndef CRIUGPU_LAYOUT_PROBE_H
#define CRIUGPU_LAYOUT_PROBE_H
#include <stddef.h>
#include <stdio.h>

#define S(t) printf("S %s %zu\n", #t, sizeof(struct t))
#define F(t, f) printf("F %s %s %zu %zu\n", #t, #f, offsetof(struct t, f), sizeof(((struct t *)0)->f))
#define C32(c) printf("C %s %llu\n", #c, (unsigned long long)(unsigned int)(c))
#define C64(c) printf("C %s %llu\n", #c, (unsigned long long)(c))
#endif
