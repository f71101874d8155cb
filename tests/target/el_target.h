/*
 * el_target.h - what a test image on a board adds to tests/lib/el_test.h:
 * a banner at the start, the deepest stack use, and at the end the closing
 * line flushed out before the semihosting exit carries the status to QEMU's
 * exit code.
 */
#ifndef EL_TARGET_H
#define EL_TARGET_H

/* Print which image runs on which board. */
void el_target_begin(const char *image);
/* Print the deepest stack use since el_target_begin (before the closing
 * line, which must come last). */
void el_target_report(void);
/* Flush stdout; returns status for main to return (the board's exit hook
 * then hands it to QEMU). */
int el_target_end(int status);

#endif /* EL_TARGET_H */
