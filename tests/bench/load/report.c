/*
 * report.c - the figures of one run: a table on stdout and a JSON file
 * { "target", "cores", "results": [{workload, metric, value, unit}], "notes" }.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define ROWS_MAX 128
#define NOTES_MAX 32

struct row {
	char workload[32], metric[48], unit[16];
	double value;
};
static struct row rows[ROWS_MAX];
static unsigned n_rows;
static char notes[NOTES_MAX][200];
static unsigned n_notes;

void bench_put(const char *workload, const char *metric, double value, const char *unit)
{
	if (n_rows == ROWS_MAX)
		return;
	struct row *r = &rows[n_rows++];
	snprintf(r->workload, sizeof r->workload, "%s", workload);
	snprintf(r->metric, sizeof r->metric, "%s", metric);
	snprintf(r->unit, sizeof r->unit, "%s", unit);
	r->value = value;
	fprintf(stderr, "bench: %-12s %-28s %12.3f %s\n", workload, metric, value, unit);
}

void bench_note(const char *fmt, ...)
{
	if (n_notes == NOTES_MAX)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(notes[n_notes++], sizeof notes[0], fmt, ap);
	va_end(ap);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

static int write_json(const char *target, const char *path)
{
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "{\n  \"target\": ");
	json_str(f, target);
	fprintf(f, ",\n  \"time\": %lld,\n  \"cores\": %ld,\n  \"results\": [\n",
		(long long)time(NULL), sysconf(_SC_NPROCESSORS_ONLN));
	for (unsigned i = 0; i < n_rows; i++) {
		fprintf(f, "    {\"workload\": ");
		json_str(f, rows[i].workload);
		fprintf(f, ", \"metric\": ");
		json_str(f, rows[i].metric);
		fprintf(f, ", \"value\": %.6g, \"unit\": ", rows[i].value);
		json_str(f, rows[i].unit);
		fprintf(f, "}%s\n", i + 1 < n_rows ? "," : "");
	}
	fprintf(f, "  ],\n  \"notes\": [");
	for (unsigned i = 0; i < n_notes; i++) {
		fprintf(f, "%s\n    ", i ? "," : "");
		json_str(f, notes[i]);
	}
	fprintf(f, "\n  ]\n}\n");
	return fclose(f) == 0 ? 0 : -1;
}

int bench_report(const char *target, const char *json_path)
{
	printf("\n%s: %-12s %-28s %12s %s\n", target, "workload", "metric", "value", "unit");
	const char *last = "";
	for (unsigned i = 0; i < n_rows; i++) {
		const struct row *r = &rows[i];
		printf("%*s  %-12s %-28s %12.*f %s\n", (int)strlen(target), "",
		       strcmp(r->workload, last) ? r->workload : "", r->metric,
		       r->value >= 100 ? 0 : 3, r->value, r->unit);
		last = r->workload;
	}
	for (unsigned i = 0; i < n_notes; i++)
		printf("note: %s\n", notes[i]);
	if (json_path != NULL && write_json(target, json_path) != 0) {
		fprintf(stderr, "bench: cannot write %s\n", json_path);
		return -1;
	}
	if (json_path != NULL)
		printf("(JSON: %s)\n", json_path);
	return 0;
}
