/*
 * el_board_config.h - capacity limits of the edgelock core on qemu-rv32: the
 * small microcontroller config, as on every board (boards/common).
 */
#ifndef EL_BOARD_CONFIG_H
#define EL_BOARD_CONFIG_H

#include "../common/el_small_config.h"

#endif /* EL_BOARD_CONFIG_H */
