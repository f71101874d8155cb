/*
 * el_board_config.h - capacity limits of the edgelock core on stm32f411: the small
 * microcontroller config (5 nodes, 16 sessions, 16 locks, 32-entry log).
 * The build force-includes this header into every core, port and test file
 * of the board (-include), so all of them agree on the limits.
 */
#ifndef EL_BOARD_CONFIG_H
#define EL_BOARD_CONFIG_H

#include "../common/el_small_config.h"

#endif /* EL_BOARD_CONFIG_H */
