/*
 * el_ini_line.h - one line of a config file for libinih (ini_parse_stream),
 * read to its end (ini_line.c); edgelockd's config and the CLI's use it.
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
 * newline; NULL at the end of f. libinih would parse the part of a line
 * that does not fit its buffer as a line of its own (the tail of a long
 * comment could set a key), and what follows a NUL byte its string
 * functions cannot see: such a line is read to its end all the same, handed
 * on empty, and *bad says why (EL_INI_LINE_OK otherwise). */
char *el_ini_line(char *str, int num, FILE *f, enum el_ini_line *bad);

#endif /* EL_INI_LINE_H */
