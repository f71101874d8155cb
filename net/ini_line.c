/*
 * ini_line.c - config lines for libinih, each read whole or refused (el_ini_line.h).
 */
#include "el_ini_line.h"

char *el_ini_line(char *str, int num, FILE *f, enum el_ini_line *bad)
{
	int c = getc(f), n = 0;
	*bad = EL_INI_LINE_OK;
	if (c == EOF)
		return NULL;
	for (; c != EOF && c != '\n'; c = getc(f)) {
		if (c == '\0')
			*bad = EL_INI_LINE_NUL;
		else if (n + 1 >= num)
			*bad = EL_INI_LINE_LONG;
		if (*bad != EL_INI_LINE_OK)
			return NULL; /* the rest may never end (/dev/zero) */
		str[n++] = (char)c;
	}
	str[n] = '\0';
	return str;
}
