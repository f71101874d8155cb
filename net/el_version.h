/*
 * el_version.h - the release and source revision edgelockd and edgelock
 * print (--version, the start line, edgelock_build_info).
 *
 * el_build_revision is generated at build time (tools/revision.sh, linked
 * from build/gen/revision.o): two builds of one release from different
 * commits tell themselves apart, which an operator mid-upgrade needs.
 */
#ifndef EL_VERSION_H
#define EL_VERSION_H

#define EL_VERSION "0.1"

/* "62236d8a1b2c", "62236d8a1b2c-dirty", a tag's describe, or "unknown". */
extern const char el_build_revision[];

#endif
