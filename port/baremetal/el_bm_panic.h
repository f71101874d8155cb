/*
 * el_bm_panic.h - the exit status of el_panic() on a board (el_panic itself
 * is declared by the core in el_assert.h). Distinct from a failing test (1)
 * and an unhandled exception (100 + n), so a run's exit code says which.
 */
#ifndef EL_BM_PANIC_H
#define EL_BM_PANIC_H

#define EL_BM_PANIC_STATUS 99

#endif /* EL_BM_PANIC_H */
