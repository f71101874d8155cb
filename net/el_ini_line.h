/*
 * el_ini_line.h - one line of a config file for libinih (ini_parse_stream),
 * read whole or refused (ini_line.c); edgelockd's config and the CLI's use it.
 */
#ifndef EL_INI_LINE_H
#define EL_INI_LINE_H

#include <stdio.h>

enum el_ini_line {
	EL_INI_LINE_OK = 0,
	EL_INI_LINE_LONG, /* more than num - 1 characters */
	EL_INI_LINE_NUL,  /* a NUL byte in it */
};

/* The next line of f into str (num bytes, libinih's buffer), without its
 * newline; NULL at the end of f, with *bad EL_INI_LINE_OK. libinih would
 * parse the part of a line that does not fit its buffer as a line of its
 * own (the tail of a long comment could set a key), and what follows a NUL
 * byte its string functions cannot see: at the first byte that makes a line
 * such, reading stops (the rest of the line may never end: /dev/zero) and
 * NULL is returned with *bad saying why. The caller refuses the file; its
 * NULL also ends libinih's reading. */
char *el_ini_line(char *str, int num, FILE *f, enum el_ini_line *bad);

#endif /* EL_INI_LINE_H */
